import { LimitedError, UnavailableError } from "./errors.js";
import { seg, type Transport } from "./http.js";
import type { Acquisition, Decision, SceneList, Subject } from "./types.js";

/** A decision with the answer's rate-limit header fields, to forward. */
export type LimitDecision = Decision & {
  /** RateLimit, RateLimit-Policy and (when denied) Retry-After, as sent. */
  headers: Record<string, string>;
};

/** Per-call options of a limit check. */
export interface LimitOptions {
  /** What the call costs. Default 1. */
  cost?: number;
  signal?: AbortSignal;
}

/** Options of allow(). */
export interface AllowOptions extends LimitOptions {
  /**
   * The answer when the Sluice server itself cannot be reached (no HTTP
   * answer): "open" allows, "closed" denies, "throw" (default) throws the
   * UnavailableError. A scene's own failure mode is applied by the server:
   * a fail-open scene answers allowed, a fail-closed one 503, which allow()
   * reads as a denial.
   */
  unreachable?: "open" | "closed" | "throw";
}

const FORWARDED = ["ratelimit", "ratelimit-policy", "retry-after"];

function forwardHeaders(h: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of FORWARDED) {
    const v = h.get(name);
    if (v !== null) out[name === "ratelimit" ? "RateLimit" : name === "ratelimit-policy" ? "RateLimit-Policy" : "Retry-After"] = v;
  }
  return out;
}

/**
 * Limits asks the server's configured scenes and policies: the scene fixes
 * the subject fields, the policy the quotas and windows (sluice.yaml).
 * Counting and deciding is one atomic step on the server.
 */
export class Limits {
  readonly #t: Transport;
  constructor(t: Transport) {
    this.#t = t;
  }

  /** The configured scenes and policies. */
  async list(signal?: AbortSignal): Promise<SceneList> {
    return (await this.#t.request<SceneList>("GET", "/v1/limits", { signal })).body;
  }

  /**
   * consume counts `cost` against every limit of the policy, all or
   * nothing, and returns the decision, allowed or not. Throws
   * UnavailableError when a fail-closed scene's store is down, and
   * InvalidError for a cost no limit can ever hold (422).
   */
  async consume(scene: string, policy: string, subject: Subject, opts: LimitOptions = {}): Promise<LimitDecision> {
    return this.#decide(`/v1/limits/${seg(scene)}/${seg(policy)}`, subject, opts.cost, opts.signal);
  }

  /** peek reads the counters without counting; always allowed. */
  async peek(scene: string, policy: string, subject: Subject, opts: { signal?: AbortSignal } = {}): Promise<LimitDecision> {
    return this.#decide(`/v1/limits/${seg(scene)}/${seg(policy)}/peek`, subject, undefined, opts.signal);
  }

  /** allow consumes and says whether the call may go on. */
  async allow(scene: string, policy: string, subject: Subject, opts: AllowOptions = {}): Promise<boolean> {
    try {
      return (await this.consume(scene, policy, subject, opts)).allowed === true;
    } catch (err) {
      if (!(err instanceof UnavailableError)) throw err;
      if (err.status !== 0) return false; // the scene fails closed
      if (opts.unreachable === "open") return true;
      if (opts.unreachable === "closed") return false;
      throw err;
    }
  }

  /**
   * assert consumes and throws LimitedError (status 429, retryAfter,
   * the decision) when denied; the same error the server's 429 maps to.
   */
  async assert(scene: string, policy: string, subject: Subject, opts: LimitOptions = {}): Promise<LimitDecision> {
    const d = await this.consume(scene, policy, subject, opts);
    if (d.allowed) return d;
    const retry = d.headers["Retry-After"];
    throw new LimitedError({
      status: 429,
      title: "Too Many Requests",
      detail: `over the limit of ${scene}/${policy}`,
      retryAfter: retry === undefined ? Math.ceil((d.retry_after_ms ?? 0) / 1000) : Number(retry),
      body: d as unknown as Record<string, unknown>,
      headers: new Headers(d.headers),
    });
  }

  /**
   * acquire takes an in-flight lease of a policy with `in_flight` (at most
   * max at once per subject), counting `cost` against its window limits in
   * the same decision. Resolves allowed with `lease.id`, or not allowed with
   * retry_after_ms (429); release the lease when the work ends.
   */
  async acquire(scene: string, policy: string, subject: Subject, opts: LimitOptions = {}): Promise<Acquisition> {
    const r = await this.#t.request<Acquisition>("POST", `/v1/limits/${seg(scene)}/${seg(policy)}/acquire`, {
      body: { subject, cost: opts.cost }, signal: opts.signal, accept: [429],
    });
    return r.body;
  }

  /** release frees a lease; false when it had expired or was released already. */
  async release(scene: string, policy: string, subject: Subject, leaseId: string, signal?: AbortSignal): Promise<boolean> {
    const r = await this.#t.request<{ released?: boolean }>("POST", `/v1/limits/${seg(scene)}/${seg(policy)}/release`, {
      body: { subject, lease_id: leaseId }, signal,
    });
    return r.body.released === true;
  }

  /**
   * hold runs fn while holding an in-flight lease, releasing it however fn
   * ends; throws LimitedError when no lease is free.
   */
  async hold<T>(scene: string, policy: string, subject: Subject, fn: () => Promise<T> | T, opts: LimitOptions = {}): Promise<T> {
    const a = await this.acquire(scene, policy, subject, opts);
    if (!a.allowed || !a.lease?.id) {
      throw new LimitedError({
        status: 429, title: "Too Many Requests", detail: `no in-flight lease free in ${scene}/${policy}`,
        retryAfter: Math.ceil((a.retry_after_ms ?? 0) / 1000), body: a as unknown as Record<string, unknown>,
      });
    }
    try {
      return await fn();
    } finally {
      await this.release(scene, policy, subject, a.lease.id).catch(() => false); // it frees itself after its TTL
    }
  }

  async #decide(path: string, subject: Subject, cost: number | undefined, signal?: AbortSignal): Promise<LimitDecision> {
    const r = await this.#t.request<Decision>("POST", path, { body: { subject, cost }, signal, accept: [429] });
    return { ...r.body, headers: forwardHeaders(r.headers) };
  }
}
