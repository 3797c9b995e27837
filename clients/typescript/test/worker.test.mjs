import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Sluice, Worker, Snooze, permanent } from "../dist/index.js";
import { startServer, eventually, unique } from "./harness.mjs";

const quiet = { warn() {}, error() {} };

test("worker against a real server", async (t) => {
  const srv = await startServer(t);
  const sluice = new Sluice({ url: srv.url });

  await t.test("drains 1,000 jobs exactly once with several workers", async () => {
    const queue = unique("bulk");
    const ids = [];
    for (let i = 0; i < 1000; i += 500) {
      const out = await sluice.jobs.batch(Array.from({ length: 500 }, (_, k) => ({ queue, kind: "n", payload: i + k, tenant: `t${k % 7}` })));
      ids.push(...out.map((e) => e.job.id));
    }
    const runs = new Map();
    const handlers = { n: async (payload, ctx) => { runs.set(ctx.job.id, (runs.get(ctx.job.id) ?? 0) + 1); return payload * 2; } };
    const workers = [1, 2, 3].map(() => new Worker({ client: sluice, queues: [queue], concurrency: 16, pollMs: 200, handlers, handleSignals: false, logger: quiet }));
    const done = workers.map((w) => w.run());
    await eventually(async () => (await sluice.jobs.stats()).queues.find((q) => q.queue === queue)?.counts.completed === 1000, { timeoutMs: 90_000, what: "1000 completed" });
    workers.forEach((w) => w.stop());
    await Promise.all(done);
    assert.equal(runs.size, 1000);
    assert.deepEqual([...runs.values()].filter((n) => n !== 1), [], "a job ran more than once");
    assert.deepEqual(ids.filter((id) => !runs.has(id)), []);
    const sample = await sluice.jobs.get(ids[123]);
    assert.equal(sample.state, "completed");
    assert.equal(sample.result, 246);
  });

  await t.test("fails, retries, snoozes and fails for good", async () => {
    const queue = unique("q");
    let flaky = 0, sleepy = 0;
    const w = new Worker({
      client: sluice, queues: [queue], concurrency: 4, pollMs: 100, handleSignals: false, logger: quiet,
      handlers: {
        flaky: async () => { if (++flaky === 1) throw new Error("upstream 502"); return "ok"; },
        sleepy: async () => { if (++sleepy === 1) throw new Snooze(50); return "woke"; },
        broken: async () => { throw permanent(new Error("bad payload")); },
      },
    });
    const running = w.run();
    const [a, b, c] = await sluice.jobs.batch([
      { queue, kind: "flaky", max_attempts: 3 }, { queue, kind: "sleepy" }, { queue, kind: "broken", max_attempts: 5 },
    ]);
    // A failed attempt backs off (1s+ by default): wait generously.
    const ja = await sluice.jobs.wait(a.job.id, { timeoutMs: 30_000 });
    assert.equal(ja.state, "completed");
    assert.equal(ja.errors[0].error, "upstream 502");
    const jb = await sluice.jobs.wait(b.job.id, { timeoutMs: 30_000 });
    assert.equal(jb.state, "completed");
    assert.equal(jb.result, "woke");
    assert.equal(sleepy, 2);
    const jc = await sluice.jobs.wait(c.job.id, { timeoutMs: 30_000 });
    assert.equal(jc.state, "failed");
    assert.equal(jc.attempt, 1, "a permanent failure is not retried");
    w.stop();
    await running;
  });

  await t.test("cancellation aborts the handler's signal and the job ends cancelled", async () => {
    const queue = unique("q");
    let started;
    const seen = new Promise((r) => (started = r));
    let reason;
    const w = new Worker({
      client: sluice, queues: [queue], leaseMs: 1500, pollMs: 100, handleSignals: false, logger: quiet,
      handlers: {
        long: (payload, ctx) => new Promise((_, reject) => {
          started();
          ctx.signal.addEventListener("abort", () => { reason = ctx.signal.reason; reject(ctx.signal.reason); });
        }),
      },
    });
    const running = w.run();
    const { job } = await sluice.jobs.enqueue({ queue, kind: "long" });
    await seen;
    assert.equal((await sluice.jobs.cancel(job.id)).cancel_requested, true);
    const end = await sluice.jobs.wait(job.id, { timeoutMs: 20_000 });
    assert.equal(end.state, "cancelled");
    assert.match(String(reason?.message), /cancelled/);
    w.stop();
    await running;
  });

  await t.test("progress reports; a server without the route makes it a no-op warned once", async () => {
    const queue = unique("q");
    const warnings = [];
    const w = new Worker({
      client: sluice, queues: [queue], pollMs: 100, handleSignals: false,
      logger: { warn: (m) => warnings.push(m), error: (m) => warnings.push(m) },
      handlers: { p: async (_, ctx) => { await ctx.progress(10, { step: 1 }); await ctx.progress(90); return "ok"; } },
    });
    const running = w.run();
    const out = await sluice.jobs.batch([{ queue, kind: "p" }, { queue, kind: "p" }]);
    for (const e of out) assert.equal((await sluice.jobs.wait(e.job.id, { timeoutMs: 20_000 })).state, "completed");
    w.stop();
    await running;
    const routeMissing = warnings.filter((m) => /does not take progress/.test(m));
    assert.ok(routeMissing.length <= 1, warnings.join("\n"));
    // A progress call that failed otherwise would be logged as "progress <id>".
    assert.deepEqual(warnings.filter((m) => /progress /.test(m) && !/does not take progress/.test(m)), []);
  });

  await t.test("stop past the drain timeout gives running jobs back", async () => {
    const queue = unique("q");
    let started;
    const seen = new Promise((r) => (started = r));
    const w = new Worker({
      client: sluice, queues: [queue], pollMs: 100, drainTimeoutMs: 100, handleSignals: false, logger: quiet,
      handlers: { stuck: (_, ctx) => new Promise((_, reject) => { started(); ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)); }) },
    });
    const running = w.run();
    const { job } = await sluice.jobs.enqueue({ queue, kind: "stuck" });
    await seen;
    w.stop();
    await running;
    const back = await sluice.jobs.get(job.id);
    assert.equal(back.state, "pending");
    assert.equal(back.attempt, 0, "giving a job back does not spend its attempt");
  });

  await t.test("a lease cooldown gathers jobs enqueued apart into one lease", async () => {
    const queue = unique("cool");
    const got = []; // jobs per lease call that brought any
    const counting = async (url, init) => {
      const res = await fetch(url, init);
      if (String(url).includes("/v1/worker/lease")) {
        const n = ((await res.clone().json()).leases ?? []).length;
        if (n > 0) got.push(n);
      }
      return res;
    };
    const a = await sluice.jobs.enqueue({ queue, kind: "k" });
    // The cooldown runs from the first lease: long enough for the two
    // enqueues below on any machine, short enough for the test.
    const w = new Worker({
      client: { url: srv.url, fetch: counting }, queues: [queue], pollMs: 200, leaseCooldownMs: 5000,
      handleSignals: false, logger: quiet, handlers: { k: async () => "ok" },
    });
    const running = w.run();
    assert.equal((await sluice.jobs.wait(a.job.id, { timeoutMs: 30_000 })).state, "completed");
    const b = await sluice.jobs.enqueue({ queue, kind: "k" });
    const c = await sluice.jobs.enqueue({ queue, kind: "k" });
    for (const e of [b, c]) assert.equal((await sluice.jobs.wait(e.job.id, { timeoutMs: 30_000 })).state, "completed");
    w.stop();
    await running;
    assert.deepEqual(got, [1, 2], "jobs per lease that brought any");
  });

  await t.test("SIGTERM drains: running jobs complete, nothing new is leased, the process exits", async () => {
    const queue = unique("drain");
    const first = await sluice.jobs.batch([1, 2, 3, 4].map((n) => ({ queue, kind: "hold", payload: n })));
    const child = spawn(process.execPath, [fileURLToPath(new URL("./fixtures/drain-worker.mjs", import.meta.url)), srv.url, queue], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (b) => (out += b));
    const exited = new Promise((r) => child.once("exit", (code, sig) => r({ code, sig })));
    await eventually(() => (out.match(/started/g) ?? []).length === 4, { timeoutMs: 90_000, what: "4 jobs started" });
    const later = await sluice.jobs.batch([5, 6].map((n) => ({ queue, kind: "hold", payload: n })));
    child.kill("SIGTERM");
    assert.deepEqual(await exited, { code: 0, sig: null });
    assert.match(out, /drained/);
    for (const e of first) {
      const j = await sluice.jobs.get(e.job.id);
      assert.equal(j.state, "completed", `job ${j.payload}`);
    }
    for (const e of later) assert.equal((await sluice.jobs.get(e.job.id)).state, "pending");
  });
});

test("a worker whose lease can never work rejects instead of spinning", async (t) => {
  const srv = await startServer(t);
  const w = new Worker({ client: { url: srv.url }, queues: [" "], handlers: {}, handleSignals: false, logger: quiet });
  await assert.rejects(w.run(), (err) => err.status === 400 && /queues/.test(err.detail));
});
