import { test } from "node:test";
import assert from "node:assert/strict";
import { Sluice, ConflictError, InvalidError, NotFoundError } from "../dist/index.js";
import { startServer, unique } from "./harness.mjs";

test("jobs, groups and tenants against a real server", async (t) => {
  const srv = await startServer(t);
  const sluice = new Sluice({ url: srv.url });

  await t.test("enqueue, get, duplicate by unique key", async () => {
    const queue = unique("q");
    const key = unique("k");
    const a = await sluice.jobs.enqueue({ queue, kind: "email", payload: { to: "a@example.com" }, tenant: "t1", unique_key: key });
    assert.equal(a.duplicate ?? false, false);
    assert.equal(a.job.state, "pending");
    const b = await sluice.jobs.enqueue({ queue, kind: "email", payload: { to: "b@example.com" }, unique_key: key });
    assert.equal(b.duplicate, true);
    assert.equal(b.job.id, a.job.id);
    const got = await sluice.jobs.get(a.job.id);
    assert.deepEqual(got.payload, { to: "a@example.com" });
    assert.equal(got.tenant, "t1");
  });

  await t.test("bad input names the field", async () => {
    await assert.rejects(sluice.jobs.enqueue({ queue: " ", kind: "x" }), (err) => {
      assert.ok(err instanceof InvalidError, String(err));
      assert.match(err.detail, /queue/);
      return true;
    });
    await assert.rejects(sluice.jobs.get("no-such-job"), NotFoundError);
  });

  await t.test("batch, list in pages, filters", async () => {
    const queue = unique("q");
    const specs = Array.from({ length: 25 }, (_, i) => ({ queue, kind: i % 2 ? "odd" : "even", payload: i }));
    const out = await sluice.jobs.batch(specs);
    assert.equal(out.length, 25);
    const seen = [];
    for await (const j of sluice.jobs.all({ queue, limit: 10 })) seen.push(j.payload);
    assert.deepEqual(seen, specs.map((s) => s.payload));
    const odd = await sluice.jobs.list({ queue, kind: "odd", limit: 100 });
    assert.equal(odd.jobs.length, 12);
    const newest = await sluice.jobs.list({ queue, order: "newest", limit: 1 });
    assert.equal(newest.jobs[0].payload, 24);
    assert.ok(newest.next);
  });

  await t.test("cancel and retry; wait returns the finished job", async () => {
    const queue = unique("q");
    const { job } = await sluice.jobs.enqueue({ queue, kind: "x" });
    const cancelled = await sluice.jobs.cancel(job.id);
    assert.equal(cancelled.state, "cancelled");
    assert.equal((await sluice.jobs.wait(job.id, { timeoutMs: 10_000 })).state, "cancelled");
    assert.equal((await sluice.jobs.cancel(job.id)).state, "cancelled"); // idempotent
    const retried = await sluice.jobs.retry(job.id);
    assert.equal(retried.state, "pending");
    await assert.rejects(sluice.jobs.wait(job.id, { timeoutMs: 100 }), (err) => err.name === "TimeoutError");
    const ac = new AbortController();
    const waiting = sluice.jobs.wait(job.id, { signal: ac.signal });
    ac.abort(new Error("gave up"));
    await assert.rejects(waiting, /gave up/);
  });

  await t.test("wait long-polls: one request, answered when the job ends", async () => {
    const gets = [];
    const counting = new Sluice({
      url: srv.url,
      fetch: (url, init) => {
        const u = new URL(url);
        if (init.method === "GET" && u.pathname.startsWith("/v1/")) gets.push(u.pathname + u.search);
        return fetch(url, init);
      },
    });
    const queue = unique("q");
    const { job } = await counting.jobs.enqueue({ queue, kind: "x" });
    const started = Date.now();
    const waiting = counting.jobs.wait(job.id, { timeoutMs: 20_000 });
    await new Promise((r) => setTimeout(r, 1500));
    await sluice.jobs.cancel(job.id);
    const done = await waiting;
    assert.equal(done.state, "cancelled");
    assert.ok(Date.now() - started < 10_000, "the wait ended with the job");
    assert.equal(gets.length, 1, `requests: ${gets.join(", ")}`);
    assert.match(gets[0], new RegExp(`^/v1/jobs/${job.id}\\?wait=\\d+ms$`));

    const group = unique("g");
    await counting.groups.create({ id: group });
    await counting.jobs.enqueue({ queue, kind: "x", group });
    gets.length = 0;
    const gwait = counting.groups.wait(group, { timeoutMs: 20_000 });
    await new Promise((r) => setTimeout(r, 1500));
    await sluice.groups.cancel(group);
    assert.equal((await gwait).done, true);
    assert.ok(gets.length <= 2, `requests: ${gets.join(", ")}`);
    assert.match(gets[0], /\/v1\/groups\/[^?]+\?wait=\d+ms$/);
  });

  await t.test("stats, pause and resume", async () => {
    const queue = unique("q");
    await sluice.jobs.enqueue({ queue, kind: "x" });
    const stats = await sluice.jobs.stats();
    assert.equal(stats.queues.find((q) => q.queue === queue).counts.pending, 1);
    const p = await sluice.jobs.pause(queue, 60_000);
    assert.equal(p.paused, true);
    assert.equal((await sluice.jobs.resume(queue)).paused, false);
  });

  await t.test("groups: create, progress, cancel; a taken id conflicts", async () => {
    const id = unique("crawl");
    const queue = unique("q");
    const g = await sluice.groups.create({ id, tenant: "team-1", max_concurrency: 2, completion_kind: "crawl-done", completion_queue: queue });
    assert.equal(g.id, id);
    await assert.rejects(sluice.groups.create({ id }), ConflictError);
    await sluice.jobs.batch([1, 2, 3].map((n) => ({ queue, kind: "page", group: id, payload: n })));
    assert.equal((await sluice.groups.get(id)).total, 3);
    const after = await sluice.groups.cancel(id);
    assert.equal(after.cancel_requested, true);
    const done = await sluice.groups.wait(id, { timeoutMs: 10_000 });
    assert.equal(done.done, true);
    assert.ok(done.completion_job_id);
  });

  await t.test("tenants: set, setLimit, get, list", async () => {
    const tenant = unique("tenant");
    const set = await sluice.tenants.set(tenant, { limit: 3, weight: 2 });
    assert.equal(set.own.limit, 3);
    assert.equal((await sluice.tenants.setLimit(tenant, 7)).own.limit, 7);
    const got = await sluice.tenants.get(tenant);
    assert.equal(got.effective.weight, 2);
    const { tenants } = await sluice.tenants.list({ limit: 1000 });
    assert.ok(tenants.some((x) => x.tenant === tenant));
  });
});
