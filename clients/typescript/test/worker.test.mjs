import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Sluice, Worker, Snooze, permanent } from "../dist/index.js";
import { startServer, eventually, unique } from "./harness.mjs";

const quiet = { warn() {}, error() {} };

// gate returns a handler whose jobs run until released, one release each,
// and what it saw: the handlers running now, the most ever at once, and the
// jobs whose handlers started, in order.
function gate() {
  const g = { running: 0, most: 0, started: [], held: [], closed: false };
  g.handler = (_, ctx) => new Promise((resolve, reject) => {
    g.running++;
    g.most = Math.max(g.most, g.running);
    g.started.push(ctx.job.id);
    let ended = false;
    const end = (settle, v) => {
      if (ended) return;
      ended = true;
      g.running--;
      settle(v);
    };
    g.held.push(() => end(resolve, "released"));
    ctx.signal.addEventListener("abort", () => end(reject, ctx.signal.reason), { once: true });
    if (g.closed) g.release();
  });
  g.release = () => g.held.shift()();
  // close releases every handler, now and later.
  g.close = () => {
    g.closed = true;
    while (g.held.length) g.release();
  };
  return g;
}

// runGated runs w; when the test ends, however it ends, it stops w and
// releases its handlers, so a failed test leaves nothing running.
// oneWaiting runs a worker of concurrency 1 and prefetch 1 on sluice over
// the two jobs ids of queue, and waits until one runs and the other waits.
async function oneWaiting(t, sluice, queue, ids) {
  const g = gate();
  const w = new Worker({
    client: sluice, queues: [queue], concurrency: 1, prefetch: 1, leaseMs: 4500, pollMs: 200, handleSignals: false, logger: quiet,
    handlers: { hold: g.handler },
  });
  const running = runGated(t, w, g);
  await eventually(async () => g.started.length === 1 && (await byState(sluice, ids)).active?.length === 2, {
    timeoutMs: 30_000, what: "one job running and one waiting",
  });
  return { g, w, running, waiting: ids.find((id) => !g.started.includes(id)) };
}

function runGated(t, w, g) {
  const running = w.run();
  t.after(async () => {
    w.stop();
    g.close();
    await running;
  });
  return running;
}

// byState reads the jobs and groups their ids by state.
async function byState(sluice, ids) {
  const out = {};
  for (const id of ids) {
    const { state } = await sluice.jobs.get(id);
    (out[state] ??= []).push(id);
  }
  return out;
}

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

  await t.test("reported usage settles the job's budget", async () => {
    // Queue budgeted-ts claims 1,000 tokens of llm-ts (sluice-test.yaml).
    const w = new Worker({
      client: sluice, queues: ["budgeted-ts"], pollMs: 100, handleSignals: false,
      handlers: { u: async (_, ctx) => { ctx.reportUsage({ "llm-ts": { tokens: 1000 } }); ctx.reportUsage({ "llm-ts": { tokens: 2000 } }); return "ok"; } },
    });
    const running = w.run();
    const { job } = await sluice.jobs.enqueue({ queue: "budgeted-ts", kind: "u" });
    assert.equal((await sluice.jobs.wait(job.id, { timeoutMs: 20_000 })).state, "completed");
    w.stop();
    await running;
    const st = (await sluice.transport.request("GET", "/v1/budgets/llm-ts")).body;
    const tokens = st.limits.find((l) => l.limit === "tokens" && l.scope === "total");
    assert.ok(tokens.used >= 2990 && tokens.used <= 3000, JSON.stringify(st));
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

  await t.test("prefetch holds concurrency + prefetch jobs and runs concurrency of them", async (t) => {
    const queue = unique("prefetch");
    const ids = (await sluice.jobs.batch([0, 1, 2, 3, 4].map((n) => ({ queue, kind: "hold", payload: n })))).map((e) => e.job.id);
    const g = gate();
    const w = new Worker({
      client: sluice, queues: [queue], concurrency: 1, prefetch: 2, pollMs: 200, handleSignals: false, logger: quiet,
      handlers: { hold: g.handler },
    });
    const running = runGated(t, w, g);
    await eventually(async () => {
      const s = await byState(sluice, ids);
      return g.running === 1 && w.active === 3 && s.active?.length === 3 && s.pending?.length === 2;
    }, { timeoutMs: 30_000, what: "1 handler running and 3 jobs active" });
    for (let n = 1; n <= 5; n++) {
      await eventually(() => g.held.length === 1, { timeoutMs: 30_000, what: `handler ${n} running` });
      assert.ok((await byState(sluice, ids)).active.length <= 3, "more than concurrency + prefetch jobs active");
      g.release();
    }
    for (const id of ids) assert.equal((await sluice.jobs.wait(id, { timeoutMs: 30_000 })).state, "completed");
    w.stop();
    await running;
    assert.equal(g.most, 1, "handlers running at once");
    assert.deepEqual([...g.started].sort(), [...ids].sort());
  });

  await t.test("with a prefetch, a busy worker leases once half of it is free", async (t) => {
    const queue = unique("prefetch-half");
    const specs = Array.from({ length: 10 }, (_, n) => ({ queue, kind: "hold", payload: n }));
    const ids = (await sluice.jobs.batch(specs)).map((e) => e.job.id);
    const g = gate();
    const asked = [];
    const client = Object.create(sluice); // sluice, with its lease calls counted
    client.transport = {
      request: (method, path, opts) => {
        if (path === "/v1/worker/lease") asked.push(opts.body.max);
        return sluice.transport.request(method, path, opts);
      },
    };
    const w = new Worker({
      client, queues: [queue], concurrency: 1, prefetch: 4, pollMs: 200, handleSignals: false, logger: quiet,
      handlers: { hold: g.handler },
    });
    const running = runGated(t, w, g);
    for (let n = 1; n <= 10; n++) {
      await eventually(() => g.held.length === 1, { timeoutMs: 30_000, what: `handler ${n} running` });
      g.release();
    }
    for (const id of ids) assert.equal((await sluice.jobs.wait(id, { timeoutMs: 30_000 })).state, "completed");
    w.stop();
    await running;
    assert.equal(asked[0], 5, `leases asked for ${asked}; want 5 first`);
    assert.ok(asked.every((n) => n >= 2), `leases asked for ${asked}; want none for fewer than half the prefetch (2)`);
  });

  await t.test("a prefetched job's lease is renewed while it waits for a slot", async (t) => {
    const queue = unique("prefetch-renew");
    const ids = (await sluice.jobs.batch([{ queue, kind: "hold" }, { queue, kind: "hold" }])).map((e) => e.job.id);
    const { g, w, running, waiting } = await oneWaiting(t, sluice, queue, ids);
    const first = await sluice.jobs.get(waiting);
    const until = Date.parse(first.lease_until);
    // Heartbeats come every third of the lease: wait for one to move the
    // waiting job's deadline, and then for the job to outlive its first one.
    await eventually(async () => Date.parse((await sluice.jobs.get(waiting)).lease_until) > until, {
      timeoutMs: 30_000, what: "the waiting job's lease renewed",
    });
    await eventually(async () => {
      const j = await sluice.jobs.get(waiting);
      return Date.now() > until && j.state === "active" && Date.parse(j.lease_until) > until;
    }, { timeoutMs: 30_000, what: "the waiting job held past its first deadline" });
    const j = await sluice.jobs.get(waiting);
    assert.equal(j.worker_id, w.id);
    assert.equal(j.attempt, first.attempt, "the same attempt");
    assert.equal(j.stalls ?? 0, 0, "its lease never lapsed");
    assert.deepEqual(g.started, ids.filter((id) => id !== waiting), "the waiting job did not start");
    g.release();
    await eventually(() => g.held.length === 1, { timeoutMs: 30_000, what: "the waiting job started" });
    g.release();
    for (const id of ids) assert.equal((await sluice.jobs.wait(id, { timeoutMs: 30_000 })).state, "completed");
    w.stop();
    await running;
  });

  await t.test("stop gives prefetched jobs back at once while the running one finishes", async (t) => {
    const queue = unique("prefetch-stop");
    const ids = (await sluice.jobs.batch([0, 1, 2, 3].map((n) => ({ queue, kind: "hold", payload: n })))).map((e) => e.job.id);
    const g = gate();
    const w = new Worker({
      client: sluice, queues: [queue], concurrency: 1, prefetch: 2, pollMs: 200, handleSignals: false, logger: quiet,
      // Far longer than the waits below: the waiting jobs must go back
      // without waiting for the drain.
      drainTimeoutMs: 300_000,
      handlers: { hold: g.handler },
    });
    const running = runGated(t, w, g);
    await eventually(async () => g.running === 1 && (await byState(sluice, ids)).active?.length === 3, {
      timeoutMs: 30_000, what: "1 handler running and 3 jobs active",
    });
    const [started] = g.started;
    const waiting = (await byState(sluice, ids)).active.filter((id) => id !== started);
    assert.equal(waiting.length, 2);
    w.stop();
    await eventually(async () => (await byState(sluice, waiting)).pending?.length === 2, {
      timeoutMs: 30_000, what: "the waiting jobs back to pending",
    });
    assert.equal(g.running, 1, "the running job still runs");
    assert.equal((await sluice.jobs.get(started)).state, "active");
    g.release();
    await running;
    assert.equal((await sluice.jobs.get(started)).state, "completed");
    assert.deepEqual(g.started, [started], "a waiting job started");
    for (const id of waiting) {
      const j = await sluice.jobs.get(id);
      assert.equal(j.state, "pending");
      assert.equal(j.attempt, 0, "giving a waiting job back does not spend its attempt");
    }
  });

  await t.test("a prefetched job cancelled while it waits ends cancelled without running", async (t) => {
    const queue = unique("prefetch-cancel");
    const ids = (await sluice.jobs.batch([{ queue, kind: "hold" }, { queue, kind: "hold" }])).map((e) => e.job.id);
    const { g, w, running, waiting } = await oneWaiting(t, sluice, queue, ids);
    assert.equal((await sluice.jobs.cancel(waiting)).cancel_requested, true);
    // The next heartbeat (a third of the lease) reads the request.
    assert.equal((await sluice.jobs.wait(waiting, { timeoutMs: 30_000 })).state, "cancelled");
    g.release();
    const other = ids.find((id) => id !== waiting);
    assert.equal((await sluice.jobs.wait(other, { timeoutMs: 30_000 })).state, "completed");
    w.stop();
    await running;
    assert.deepEqual(g.started, [other], "the cancelled job's handler ran");
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

test("a negative prefetch is rejected", () => {
  assert.throws(
    () => new Worker({ client: { url: "http://127.0.0.1:1" }, queues: ["q"], handlers: {}, prefetch: -1 }),
    (err) => err instanceof TypeError && /prefetch must be a whole number, not negative, got -1/.test(err.message),
  );
});
