import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Sluice } from "../dist/index.js";
import { useIPFrequencyLimit } from "../dist/middleware.js";
import { makeRoute } from "../dist-examples/nextjs-route.js";
import { startServer, unique } from "./harness.mjs";

// listen serves handler on a free loopback port.
async function listen(t, handler) {
  const server = http.createServer(handler);
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => new Promise((r) => server.close(r)));
  return `http://127.0.0.1:${server.address().port}`;
}

test("IP-limit middleware against a real server", async (t) => {
  const srv = await startServer(t);
  const sluice = new Sluice({ url: srv.url });

  await t.test("Express style: next() while allowed, then 429 with the server's headers", async (t) => {
    const limit = useIPFrequencyLimit({ client: sluice, id: "login", limit: 3, seconds: 60, trustedProxies: ["127.0.0.1"] });
    const url = await listen(t, (req, res) => limit(req, res, (err) => {
      if (err) { res.statusCode = 500; return res.end(String(err)); }
      res.end("ok");
    }));
    const ip = `203.0.113.${Math.floor(Math.random() * 250) + 1}`;
    const hit = () => fetch(url, { headers: { "X-Forwarded-For": `6.6.6.6, ${ip}` } });
    for (let i = 0; i < 3; i++) {
      const r = await hit();
      assert.equal(r.status, 200, await r.text());
      assert.match(r.headers.get("ratelimit"), new RegExp(`r=${2 - i}`));
    }
    const denied = await hit();
    assert.equal(denied.status, 429);
    assert.equal(denied.headers.get("content-type"), "application/problem+json");
    assert.ok(Number(denied.headers.get("retry-after")) >= 1);
    assert.match(denied.headers.get("ratelimit-policy"), /q=3;w=60/);
    const body = await denied.json();
    assert.equal(body.status, 429);
    assert.equal(body.allowed, false);
    // Another client behind the same proxy has its own count.
    const other = await fetch(url, { headers: { "X-Forwarded-For": "198.51.100.7" } });
    assert.equal(other.status, 200);
    // The spoofed left-most entry was never the subject.
    assert.equal((await sluice.limits.peek("ip", "login", { ip: "6.6.6.6" })).limits[0].used, 0);
  });

  await t.test("an untrusted peer's forwarding headers are ignored", async (t) => {
    const limit = useIPFrequencyLimit({ client: sluice, id: "qrcode" });
    const url = await listen(t, (req, res) => limit(req, res, () => res.end("ok")));
    await fetch(url, { headers: { "X-Forwarded-For": "192.0.2.77" } });
    assert.equal((await sluice.limits.peek("ip", "qrcode", { ip: "192.0.2.77" })).limits[0].used, 0);
    assert.ok((await sluice.limits.peek("ip", "qrcode", { ip: "127.0.0.1" })).limits[0].used >= 1);
  });

  await t.test("numbers that disagree with sluice.yaml are refused", async (t) => {
    const limit = useIPFrequencyLimit({ client: sluice, id: "login", limit: 100, seconds: 60 });
    const url = await listen(t, (req, res) => limit(req, res, (err) => { res.statusCode = err ? 500 : 200; res.end(String(err ?? "ok")); }));
    const r = await fetch(url);
    assert.equal(r.status, 500);
    assert.match(await r.text(), /not 100 per 60s/);
  });

  await t.test("an unreachable server lets requests through unless closed", async (t) => {
    const dead = { url: "http://127.0.0.1:1", timeoutMs: 2000 };
    const open = useIPFrequencyLimit({ client: dead, id: "login" });
    const closed = useIPFrequencyLimit({ client: dead, id: "login", unreachable: "closed" });
    const url = await listen(t, async (req, res) => {
      const mw = req.url === "/closed" ? closed : open;
      if (await mw(req, res)) res.end("ok");
    });
    assert.equal((await fetch(url)).status, 200);
    assert.equal((await fetch(url + "/closed")).status, 503);
  });

  await t.test("the Next.js example route: IP limit, then the member limit", async (t) => {
    const url = await listen(t, makeRoute(sluice, ["127.0.0.1"]));
    const ip = `198.51.100.${Math.floor(Math.random() * 250) + 1}`;
    const member = unique("member");
    const call = () => fetch(url, { headers: { "X-Forwarded-For": ip, "X-Member-Id": member } });
    const ok = await call();
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), { exported: member });
    const byMember = await call(); // export-usage: 1 per minute
    assert.equal(byMember.status, 429);
    assert.match(byMember.headers.get("ratelimit-policy"), /export-usage/);
    assert.equal((await call()).status, 429); // third call: still the member's limit
    const byIP = await call(); // fourth: the IP limit (3 a minute) answers first
    assert.equal(byIP.status, 429);
    assert.match(byIP.headers.get("ratelimit-policy"), /ip\/login|login/);
  });
});
