import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Sluice } from "../dist/index.js";
import { startCrawl, scrapeWorker, crawlStatus } from "../dist-examples/scrape-worker.js";
import { run as runInvoices } from "../dist-examples/invoices.js";
import { startServer, eventually, unique } from "./harness.mjs";

test("the Firecrawl-style scrape worker example", async (t) => {
  const srv = await startServer(t);
  const sluice = new Sluice({ url: srv.url });
  // A site to crawl; it counts the requests in flight to check the caps.
  let inFlight = 0, most = 0;
  const site = http.createServer((req, res) => {
    inFlight++;
    most = Math.max(most, inFlight);
    setTimeout(() => {
      inFlight--;
      if (req.url === "/missing") { res.statusCode = 404; return res.end(); }
      res.end(`<title>page ${req.url}</title>`);
    }, 20);
  });
  await new Promise((r) => site.listen(0, "127.0.0.1", r));
  t.after(() => new Promise((r) => site.close(r)));
  const base = `http://127.0.0.1:${site.address().port}`;

  const queue = unique("scrape");
  const crawlId = unique("crawl");
  const urls = [...Array.from({ length: 12 }, (_, i) => `${base}/p${i}`), `${base}/missing`];
  let report;
  const worker = scrapeWorker(sluice, (r) => (report = r), queue);
  const running = worker.run();
  await startCrawl(sluice, { team: unique("team"), crawlId, urls, queue });
  await eventually(() => report, { timeoutMs: 60_000, what: "the crawl's completion job" });
  worker.stop();
  await running;

  const g = await crawlStatus(sluice, crawlId);
  assert.equal(g.done, true);
  assert.equal(g.jobs.completed, 12);
  assert.equal(g.jobs.failed, 1, "the 404 page failed for good");
  assert.ok(most <= 2, `at most 2 pages at once (team and crawl caps), saw ${most}`);
  assert.ok(report, "the completion job ran");
});

test("the invoices example (Go's examples/queue over HTTP)", async (t) => {
  const srv = await startServer(t);
  const lines = [];
  const jobs = await runInvoices(new Sluice({ url: srv.url }), unique("billing"), (s) => lines.push(s));
  assert.deepEqual(jobs.map((j) => j.state), ["completed", "completed", "completed", "completed", "failed"]);
  assert.match(lines[0], /duplicate=true/);
  assert.ok(lines.some((l) => l.startsWith("ACME-3   completed after 2 attempt(s) -> acme-3.pdf")), lines.join("\n"));
  assert.ok(lines.some((l) => l.startsWith("BROKEN   failed    after 1 attempt(s)")), lines.join("\n"));
});
