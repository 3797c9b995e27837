// The worker protocol over HTTP: long-poll leases, heartbeat every third
// of the lease, end each job with its token (complete, fail or requeue),
// and give jobs back when shutting down.
import { Sluice } from "./client.js";
import { AuthError, ConflictError, InvalidError, NotFoundError, UnavailableError } from "./errors.js";
import type { ClientOptions } from "./http.js";
import { seg } from "./http.js";
import { sleep } from "./jobs.js";
import type { Job, Lease } from "./types.js";

/** What a handler gets besides the payload. */
export interface JobContext {
  readonly job: Job;
  /** Aborted when the job is cancelled, its lease is lost, or the worker gives it back. */
  readonly signal: AbortSignal;
  /** Reports progress (0..100 and any JSON); a no-op on a server without it. */
  progress(percent: number, data?: unknown): Promise<void>;
  /**
   * Reports what the job really used of the budgets it claimed, by budget
   * and unit (`{ openai: { tokens: 3000 } }`); reports add up. Sent with
   * the job's complete or fail, so the server settles the job's budgets
   * with it: the difference from the estimate is charged or refunded.
   */
  reportUsage(usage: Usage): void;
}

/** What a job used of its budgets, by budget and unit. */
export type Usage = Record<string, Record<string, number>>;

/** A handler returns the job's result (any JSON) or throws. */
export type Handler = (payload: unknown, ctx: JobContext) => unknown;

/** Throw to give the job back without spending its attempt, to run after delayMs. */
export class Snooze extends Error {
  constructor(readonly delayMs: number) {
    super(`sluice: snoozed for ${delayMs}ms`);
    this.name = "Snooze";
  }
}

/** Throw to fail the attempt: permanently, or to retry after retryInMs. */
export class JobFailure extends Error {
  readonly permanent: boolean;
  readonly retryInMs: number | undefined;
  constructor(message: string, opts: { permanent?: boolean; retryInMs?: number; cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
    this.name = "JobFailure";
    this.permanent = opts.permanent ?? false;
    this.retryInMs = opts.retryInMs;
  }
}

/** permanent wraps an error so the job fails for good, without retries. */
export function permanent(err: unknown): JobFailure {
  return new JobFailure(err instanceof Error ? err.message : String(err), { permanent: true, cause: err });
}

/** Why a job's signal was aborted. */
export type AbortCause = "cancelled" | "lease-lost" | "shutdown";

/** Options of a Worker. */
export interface WorkerOptions {
  /** A client, or the options to make one. */
  client?: Sluice | ClientOptions;
  /** Queues to lease from, in order of preference. */
  queues: string[];
  /** Handlers by job kind. */
  handlers: Record<string, Handler>;
  /** Jobs run at once. Default 10. */
  concurrency?: number;
  /** Default a random id. */
  workerId?: string;
  /** Lease length asked for; default the server's queues.lease. */
  leaseMs?: number;
  /** How long one lease call waits for work (long-poll). Default 5000, at most 60000. */
  pollMs?: number;
  /**
   * After a lease that brought fewer jobs than asked, wait until this long
   * has passed since it began before leasing again: the jobs that arrive
   * meanwhile come in one call, for up to this much more start latency.
   * Default 0, none (the Go worker's LeaseCooldown).
   */
  leaseCooldownMs?: number;
  /**
   * How many leased jobs beyond `concurrency` the worker may hold, waiting
   * for a handler slot. Default 0, none: the worker leases only for free
   * slots. With short jobs the next ones are then already in hand when
   * slots free, and the lease overlaps the work instead of following it.
   * A waiting job is held: its lease is renewed as a running job's is, it
   * counts against its tenant's limit in the server, and no other worker
   * can take it, so keep this small when jobs are long. A waiting job that
   * is cancelled ends cancelled and one whose lease is lost is dropped,
   * neither having run; jobs still waiting at stop() are given back at
   * once (attempt not spent). While busy, the worker leases again once
   * half the prefetch (rounded up) is free, not for each job that ends:
   * fewer, larger leases. The Go worker's Prefetch.
   */
  prefetch?: number;
  /** On stop, how long running jobs may finish before they are given back. Default 30000. */
  drainTimeoutMs?: number;
  /** Drain on SIGTERM and SIGINT (Node). Default true. */
  handleSignals?: boolean;
  /** Where faults are reported. Default console. */
  logger?: Pick<Console, "warn" | "error">;
}

interface Running {
  lease: Lease;
  id: string;
  token: string;
  abort: AbortController;
  cause?: AbortCause;
  done: Promise<void>;
  /** Its place in the queue for a handler slot; only with a prefetch. */
  slot?: Ticket;
  /** What the handler reported using of its budgets (reportUsage). */
  usage?: Usage;
}

/** A job's place in the queue for a handler slot. */
interface Ticket {
  granted: boolean;
  /** Resolves once the slot is granted. */
  ready: Promise<void>;
  grant: () => void;
}

/**
 * SlotQueue hands the handler slots to prefetched jobs in the order they
 * were leased, which is the server's order: a job leased first starts first.
 */
class SlotQueue {
  #free: number;
  readonly #wait: Ticket[] = [];

  constructor(slots: number) {
    this.#free = slots;
  }

  /** enter queues for a slot; calls must be made in lease order. */
  enter(): Ticket {
    let resolve!: () => void;
    const ready = new Promise<void>((r) => (resolve = r));
    const t: Ticket = { granted: false, ready, grant: () => { t.granted = true; resolve(); } };
    if (this.#free > 0 && this.#wait.length === 0) {
      this.#free--;
      t.grant();
    } else {
      this.#wait.push(t);
    }
    return t;
  }

  /** release frees a granted slot: the longest waiter gets it. */
  release(): void {
    const next = this.#wait.shift();
    if (next) next.grant();
    else this.#free++;
  }

  /** leave withdraws a ticket that will not run; a slot granted to it passes on. */
  leave(t: Ticket): void {
    const i = this.#wait.indexOf(t);
    if (i >= 0) this.#wait.splice(i, 1);
    else if (t.granted) this.release();
  }
}

/**
 * Worker runs jobs of the given kinds from the given queues. run() leases
 * while running, up to `concurrency` jobs at once (plus `prefetch` more
 * leased and waiting for a handler slot), and returns after
 * stop() (or SIGTERM) once running jobs have finished or, past
 * drainTimeoutMs, been given back. A job whose handler resolves is
 * completed with the value; Snooze requeues it; any other throw fails the
 * attempt (retried while attempts remain unless JobFailure.permanent). A
 * cancelled job's signal aborts and it ends cancelled whatever the handler
 * does; a job whose lease was lost is dropped.
 */
export class Worker {
  readonly client: Sluice;
  readonly id: string;
  readonly #opts: WorkerOptions;
  readonly #running = new Map<string, Running>();
  readonly #stop = new AbortController();
  #slot: (() => void) | undefined;
  readonly #handlerSlots: SlotQueue | undefined; // handler slots; only with a prefetch
  #progressMissing = false;
  #started = false;
  #fatal: unknown;

  constructor(opts: WorkerOptions) {
    if (!opts.queues?.length) throw new TypeError("sluice: worker: queues must name at least one queue");
    const prefetch = opts.prefetch ?? 0;
    if (!Number.isInteger(prefetch) || prefetch < 0) {
      throw new TypeError(`sluice: worker: prefetch must be a whole number, not negative, got ${prefetch}`);
    }
    if (prefetch > 0) this.#handlerSlots = new SlotQueue(opts.concurrency ?? 10);
    this.#opts = opts;
    this.client = opts.client instanceof Sluice ? opts.client : new Sluice(opts.client);
    this.id = opts.workerId ?? `ts-${globalThis.crypto.randomUUID()}`;
  }

  /** Jobs held now: running, or (with a prefetch) leased and waiting for a slot. */
  get active(): number {
    return this.#running.size;
  }

  /** stop ends leasing; run() resolves once running jobs are finished or given back. */
  stop(): void {
    this.#stop.abort();
  }

  /**
   * run leases and runs jobs until stop(). It may be called once. It
   * rejects, after draining, when leasing can never work (AuthError: the
   * token; InvalidError: the queue names); transient faults are logged and
   * retried with back-off.
   */
  async run(): Promise<void> {
    if (this.#started) throw new Error("sluice: worker: run called twice");
    this.#started = true;
    const off = this.#opts.handleSignals === false ? () => {} : this.#onSignals();
    try {
      await this.#loop();
      await this.#drain();
    } finally {
      off();
    }
    if (this.#fatal !== undefined) throw this.#fatal;
  }

  #onSignals(): () => void {
    const proc = (globalThis as { process?: NodeJS.Process }).process;
    if (!proc?.once) return () => {};
    const h = () => this.stop();
    proc.once("SIGTERM", h);
    proc.once("SIGINT", h);
    return () => {
      proc.off("SIGTERM", h);
      proc.off("SIGINT", h);
    };
  }

  async #loop(): Promise<void> {
    // Jobs held at most: running, or waiting for a handler slot.
    const held = (this.#opts.concurrency ?? 10) + (this.#opts.prefetch ?? 0);
    // Places that must be free before a lease: 1, or half the prefetch.
    // With fewer free, more than half the prefetch waits for slots, so none
    // idles while the worker waits to lease more at once.
    const leaseAt = Math.max(1, Math.ceil((this.#opts.prefetch ?? 0) / 2));
    const cooldown = this.#opts.leaseCooldownMs ?? 0;
    let backoff = 100;
    let last = 0; // when the last lease that brought fewer than asked began
    while (!this.#stop.signal.aborted) {
      if (held - this.#running.size < leaseAt) {
        await new Promise<void>((resolve) => {
          const onStop = () => resolve();
          this.#slot = () => {
            this.#stop.signal.removeEventListener("abort", onStop);
            resolve();
          };
          this.#stop.signal.addEventListener("abort", onStop, { once: true });
        });
        continue;
      }
      if (cooldown > 0 && last > 0 && last + cooldown > Date.now()) {
        await sleep(last + cooldown - Date.now(), this.#stop.signal).catch(() => {});
        continue; // slots and the stop looked at again
      }
      let leases: Lease[];
      try {
        const max = Math.min(held - this.#running.size, 100);
        const began = Date.now();
        leases = await this.#lease(max);
        last = leases.length < max ? began : 0;
        backoff = 100;
      } catch (err) {
        if (this.#stop.signal.aborted) break;
        if (err instanceof AuthError || err instanceof InvalidError) {
          // A bad token or queue name never heals: stop, and run() rejects.
          this.#fatal = err;
          this.stop();
          break;
        }
        (this.#opts.logger ?? console).warn(`sluice: worker: lease: ${String(err)}`);
        await sleep(backoff, this.#stop.signal).catch(() => {});
        backoff = Math.min(backoff * 2, 5000);
        continue;
      }
      for (const l of leases) {
        if (this.#stop.signal.aborted) void this.#giveBack(l); // leased as we stopped
        else this.#start(l);
      }
    }
  }

  async #lease(max: number): Promise<Lease[]> {
    const wait = Math.min(this.#opts.pollMs ?? 5000, 60_000);
    const r = await this.client.transport.request<{ leases: Lease[] }>("POST", "/v1/worker/lease", {
      body: { queues: this.#opts.queues, worker_id: this.id, max, wait_ms: wait, lease_ms: this.#opts.leaseMs },
      signal: this.#stop.signal,
      timeoutMs: wait + 30_000,
    });
    return r.body.leases;
  }

  #start(lease: Lease): void {
    const run: Running = { lease, id: lease.job.id, token: lease.token, abort: new AbortController(), done: Promise.resolve() };
    run.slot = this.#handlerSlots?.enter(); // here, in lease order
    this.#running.set(run.id, run);
    run.done = this.#execute(run).finally(() => {
      this.#running.delete(run.id);
      const slot = this.#slot;
      this.#slot = undefined;
      slot?.();
    });
  }

  async #execute(run: Running): Promise<void> {
    const job = run.lease.job;
    const stopBeat = this.#heartbeat(run); // renews the lease while the job waits, too
    if (run.slot && !(await this.#awaitSlot(run, run.slot))) {
      stopBeat();
      // Stopped while it waited: it never started, so it goes back at once.
      if (this.#stop.signal.aborted) this.#abort(run, "shutdown");
      if (run.cause === "shutdown") await this.#giveBack(run.lease);
      else await this.#finish(run, { ok: false, err: run.abort.signal.reason }); // cancelled or lost
      return;
    }
    let outcome: { ok: true; value: unknown } | { ok: false; err: unknown };
    try {
      const handler = this.#opts.handlers[job.kind ?? ""];
      if (!handler) throw new JobFailure(`sluice: worker: no handler for kind "${job.kind}"`);
      const ctx: JobContext = {
        job, signal: run.abort.signal, progress: (p, d) => this.#progress(run, p, d),
        reportUsage: (u) => addUsage(run, u),
      };
      outcome = { ok: true, value: await handler(job.payload, ctx) };
    } catch (err) {
      outcome = { ok: false, err };
    } finally {
      stopBeat();
      if (run.slot) this.#handlerSlots!.release(); // the next job starts while this one's end is written
    }
    await this.#finish(run, outcome);
  }

  // awaitSlot waits for the job's handler slot. It resolves false, the
  // slot left, when the job must not start: cancelled or its lease lost
  // while it waited, or the worker stopped.
  async #awaitSlot(run: Running, slot: Ticket): Promise<boolean> {
    if (!slot.granted) {
      const listening = new AbortController();
      const quit = new Promise<void>((resolve) => {
        for (const signal of [run.abort.signal, this.#stop.signal]) {
          if (signal.aborted) resolve();
          else signal.addEventListener("abort", () => resolve(), { once: true, signal: listening.signal });
        }
      });
      await Promise.race([slot.ready, quit]);
      listening.abort();
    }
    if (run.cause || this.#stop.signal.aborted) {
      this.#handlerSlots!.leave(slot);
      return false;
    }
    return true;
  }

  async #finish(run: Running, outcome: { ok: true; value: unknown } | { ok: false; err: unknown }): Promise<void> {
    const path = `/v1/worker/jobs/${seg(run.id)}`;
    if (run.cause === "lease-lost" || run.cause === "shutdown") return; // no longer ours
    let body: Record<string, unknown>;
    let action: string;
    if (run.cause === "cancelled") {
      [action, body] = ["fail", { token: run.token, error: "cancelled", permanent: true }];
    } else if (outcome.ok) {
      [action, body] = ["complete", { token: run.token, result: outcome.value ?? null, usage: run.usage }];
    } else if (outcome.err instanceof Snooze) {
      [action, body] = ["requeue", { token: run.token, delay_ms: Math.max(0, Math.round(outcome.err.delayMs)) }];
    } else {
      const f = outcome.err instanceof JobFailure ? outcome.err : undefined;
      const msg = outcome.err instanceof Error ? outcome.err.message : String(outcome.err);
      [action, body] = ["fail", { token: run.token, error: msg || "error", permanent: f?.permanent, retry_in_ms: f?.retryInMs, usage: run.usage }];
    }
    await this.#settle(`${path}/${action}`, body);
  }

  // settle sends the final call, retrying while the server is unreachable
  // or unavailable: a finished job must not run again for a blip.
  async #settle(path: string, body: Record<string, unknown>): Promise<void> {
    for (let attempt = 0, pause = 100; ; attempt++, pause = Math.min(pause * 2, 2000)) {
      try {
        await this.client.transport.request("POST", path, { body });
        return;
      } catch (err) {
        if (err instanceof ConflictError) return; // the lease is gone: the job is not ours
        if (!(err instanceof UnavailableError) || attempt >= 8) {
          (this.#opts.logger ?? console).error(`sluice: worker: ${path}: ${String(err)}`);
          return;
        }
        await sleep(pause);
      }
    }
  }

  #heartbeat(run: Running): () => void {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    // Every third of what is left of the lease, read from each answer.
    const every = (leaseUntil: string | undefined) => {
      const until = Date.parse(leaseUntil ?? "");
      const left = Number.isNaN(until) ? (this.#opts.leaseMs ?? 30_000) : until - Date.now();
      return Math.max(50, Math.floor(left / 3));
    };
    let interval = every(run.lease.job.lease_until);
    const beat = async () => {
      try {
        const r = await this.client.transport.request<{ lease_until?: string; cancel_requested?: boolean }>(
          "POST", `/v1/worker/jobs/${seg(run.id)}/heartbeat`, { body: { token: run.token, lease_ms: this.#opts.leaseMs } },
        );
        if (r.body.cancel_requested) this.#abort(run, "cancelled");
        interval = every(r.body.lease_until);
      } catch (err) {
        if (err instanceof ConflictError || err instanceof NotFoundError) this.#abort(run, "lease-lost");
        else (this.#opts.logger ?? console).warn(`sluice: worker: heartbeat ${run.id}: ${String(err)}`);
      }
      if (!stopped) timer = setTimeout(beat, interval);
    };
    timer = setTimeout(beat, interval);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  #abort(run: Running, cause: AbortCause): void {
    if (run.cause) return;
    run.cause = cause;
    run.abort.abort(new DOMException(`sluice: job ${run.id}: ${cause}`, "AbortError"));
  }

  async #progress(run: Running, percent: number, data?: unknown): Promise<void> {
    if (this.#progressMissing || run.cause) return;
    try {
      await this.client.transport.request("POST", `/v1/worker/jobs/${seg(run.id)}/progress`, {
        body: { token: run.token, percent, data },
      });
    } catch (err) {
      if (err instanceof NotFoundError && err.detail.startsWith("no route")) {
        if (this.#progressMissing) return; // another job learned it first
        this.#progressMissing = true;
        (this.#opts.logger ?? console).warn("sluice: worker: this server does not take progress reports; progress() is a no-op");
        return;
      }
      if (err instanceof ConflictError) return this.#abort(run, "lease-lost");
      (this.#opts.logger ?? console).warn(`sluice: worker: progress ${run.id}: ${String(err)}`);
    }
  }

  async #drain(): Promise<void> {
    const all = () => Promise.all([...this.#running.values()].map((r) => r.done));
    const timeout = this.#opts.drainTimeoutMs ?? 30_000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), timeout)));
    const r = await Promise.race([all(), late]);
    clearTimeout(timer);
    if (r !== "late") return;
    const left = [...this.#running.values()];
    await Promise.all(
      left.map(async (run) => {
        this.#abort(run, "shutdown");
        await this.#giveBack(run.lease);
      }),
    );
  }

  // giveBack requeues a job at once without spending its attempt.
  async #giveBack(lease: Lease): Promise<void> {
    await this.#settle(`/v1/worker/jobs/${seg(lease.job.id)}/requeue`, { token: lease.token, delay_ms: 0 });
  }
}

// addUsage adds a handler's usage report to the job's total.
function addUsage(run: Running, usage: Usage): void {
  run.usage ??= {};
  for (const [budget, cost] of Object.entries(usage)) {
    const into = (run.usage[budget] ??= {});
    for (const [unit, n] of Object.entries(cost)) into[unit] = (into[unit] ?? 0) + n;
  }
}
