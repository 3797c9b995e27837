import { test } from "node:test";
import assert from "node:assert/strict";
import { Sluice, LimitedError, NotFoundError, InvalidError, UnavailableError } from "../dist/index.js";
import { startServer, unique } from "./harness.mjs";

test("limits against a real server", async (t) => {
  const srv = await startServer(t);
  const sluice = new Sluice({ url: srv.url });

  await t.test("list names the configured scenes", async () => {
    const { scenes } = await sluice.limits.list();
    assert.ok(scenes.some((s) => s.name === "member" && s.policies.some((p) => p.name === "export-usage")));
  });

  await t.test("consume counts, then denies with the headers and retry-after", async () => {
    const member = unique("m");
    const first = await sluice.limits.consume("member", "export-usage", { member });
    assert.equal(first.allowed, true);
    assert.match(first.headers["RateLimit"], /r=0/);
    const second = await sluice.limits.consume("member", "export-usage", { member });
    assert.equal(second.allowed, false);
    assert.ok(second.retry_after_ms > 0, `retry_after_ms ${second.retry_after_ms}`);
    assert.ok(Number(second.headers["Retry-After"]) >= 1);
  });

  await t.test("allow is a boolean and assert throws LimitedError", async () => {
    const member = unique("m");
    assert.equal(await sluice.limits.allow("member", "export-usage", { member }), true);
    assert.equal(await sluice.limits.allow("member", "export-usage", { member }), false);
    await assert.rejects(sluice.limits.assert("member", "export-usage", { member }), (err) => {
      assert.ok(err instanceof LimitedError);
      assert.equal(err.status, 429);
      assert.ok(err.retryAfter >= 1);
      assert.ok(err.retryAfterMs > 0);
      assert.equal(err.decision.allowed, false);
      return true;
    });
  });

  await t.test("peek reads without counting", async () => {
    const member = unique("m");
    for (let i = 0; i < 3; i++) {
      const d = await sluice.limits.peek("member", "chat", { member });
      assert.equal(d.allowed, true);
      assert.equal(d.limits[0].remaining, 5);
    }
    await sluice.limits.consume("member", "chat", { member }, { cost: 2 });
    assert.equal((await sluice.limits.peek("member", "chat", { member })).limits[0].remaining, 3);
  });

  await t.test("errors map the problem answers", async () => {
    await assert.rejects(sluice.limits.consume("nope", "x", { member: "1" }), NotFoundError);
    await assert.rejects(sluice.limits.consume("member", "chat", { team: "1" }), (err) => {
      assert.ok(err instanceof InvalidError);
      assert.equal(err.status, 400);
      assert.match(err.detail, /team/);
      return true;
    });
    await assert.rejects(sluice.limits.consume("member", "chat", { member: "1" }, { cost: 99 }), (err) => err instanceof InvalidError && err.status === 422);
  });

  await t.test("an unreachable server is UnavailableError, or the caller's failure mode", async () => {
    const dead = new Sluice({ url: "http://127.0.0.1:1", timeoutMs: 2000 });
    await assert.rejects(dead.limits.allow("member", "chat", { member: "1" }), (err) => err instanceof UnavailableError && err.status === 0);
    assert.equal(await dead.limits.allow("member", "chat", { member: "1" }, { unreachable: "open" }), true);
    assert.equal(await dead.limits.allow("member", "chat", { member: "1" }, { unreachable: "closed" }), false);
  });
});

test("in-flight leases: acquire, release, hold", async (t) => {
  const srv = await startServer(t);
  const sluice = new Sluice({ url: srv.url });
  const member = unique("m");
  const a = await sluice.limits.acquire("member", "export", { member });
  const b = await sluice.limits.acquire("member", "export", { member });
  assert.equal(a.allowed && b.allowed, true);
  const full = await sluice.limits.acquire("member", "export", { member });
  assert.equal(full.allowed, false);
  assert.equal(full.in_flight.held, 2);
  await assert.rejects(sluice.limits.hold("member", "export", { member }, () => "never"), LimitedError);
  assert.equal(await sluice.limits.release("member", "export", { member }, a.lease.id), true);
  assert.equal(await sluice.limits.release("member", "export", { member }, a.lease.id), false);
  assert.equal(await sluice.limits.hold("member", "export", { member }, async () => "ran"), "ran");
  assert.equal((await sluice.limits.acquire("member", "export", { member })).allowed, true, "hold released its lease");
});
