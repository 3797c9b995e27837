import io
import os
import sys
import unittest

from harness import HERE, Server, unique

from sluice import Sluice

sys.path.insert(0, os.path.join(HERE, "..", "examples"))
import invoices  # noqa: E402

srv: Server


def setUpModule() -> None:
    global srv
    srv = Server()


def tearDownModule() -> None:
    srv.stop()


class InvoicesExampleTest(unittest.TestCase):
    def test_invoices(self) -> None:
        with Sluice(srv.url) as sluice:
            out = io.StringIO()
            states = invoices.run(sluice, unique("billing"), out)
        self.assertEqual(states, ["completed", "completed", "completed", "completed", "failed"])
        text = out.getvalue()
        self.assertIn("duplicate=True", text)
        self.assertIn("ACME-3   completed after 2 attempt(s) -> acme-3.pdf", text)
        self.assertIn("BROKEN   failed    after 1 attempt(s)", text)


if __name__ == "__main__":
    unittest.main()
