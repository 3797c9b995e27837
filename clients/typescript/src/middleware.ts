// HTTP middleware for Express-style and Next.js API routes: FastGPT's
// useIPFrequencyLimit on top of a Sluice scene. The route id is the
// scene's policy, so quotas and windows live in sluice.yaml with every
// other limit; the middleware only resolves the client IP (the same safe
// way as the Go middleware), asks the server, and answers 429 with the
// server's own headers and problem body.
import { Sluice } from "./client.js";
import { clientIP, Trusted, type ClientIPOptions, type RequestLike } from "./clientip.js";
import { InvalidError, SluiceError, UnavailableError } from "./errors.js";
import type { ClientOptions } from "./http.js";

export { clientIP, parseHost, Trusted, UNKNOWN, type ClientIPOptions, type RequestLike } from "./clientip.js";

/** The parts of a Node/Express/Next.js response the middleware writes. */
export interface ResponseLike {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(body?: string): unknown;
  headersSent?: boolean;
}

/** Options of useIPFrequencyLimit. */
export interface IPLimitOptions extends ClientIPOptions {
  /** The route id: the policy of the scene. */
  id: string;
  /** The scene whose subject is [ip]. Default "ip". */
  scene?: string;
  /** A client, or the options to make one. */
  client?: Sluice | ClientOptions;
  /**
   * The quota and window (seconds) the route expects. When set, the first
   * call checks them against the server's policy and throws InvalidError
   * on a mismatch, so a number in code cannot silently disagree with
   * sluice.yaml.
   */
  limit?: number;
  seconds?: number;
  /** Default true; false lets every request through (FastGPT's USE_IP_LIMIT). */
  enabled?: boolean;
  /** When the Sluice server cannot be reached: "open" (default) lets the request through, "closed" answers 503. */
  unreachable?: "open" | "closed";
}

/** A middleware: Express calls it with next; a Next.js API route awaits its boolean. */
export type IPLimitMiddleware = (req: RequestLike, res: ResponseLike, next?: (err?: unknown) => void) => Promise<boolean>;

/**
 * useIPFrequencyLimit limits a route per client IP. With `next` (Express)
 * it calls next() when allowed; without (Next.js API routes) it resolves
 * true when allowed, and false after answering 429 (or 503):
 *
 * ```ts
 * const limit = useIPFrequencyLimit({ id: "wechat-login-qrcode", limit: 10, seconds: 60 });
 * app.get("/qrcode", limit, handler);                 // Express
 * if (!(await limit(req, res))) return;               // Next.js API route
 * ```
 */
export function useIPFrequencyLimit(opts: IPLimitOptions): IPLimitMiddleware {
  const client = opts.client instanceof Sluice ? opts.client : new Sluice(opts.client);
  const scene = opts.scene ?? "ip";
  const trusted = new Trusted(opts.trustedProxies);
  let checked: Promise<void> | undefined;
  return async (req, res, next) => {
    if (opts.enabled === false) return pass(next);
    try {
      checked ??= checkPolicy(client, scene, opts).catch((err) => {
        if (!(err instanceof InvalidError)) checked = undefined; // ask again next time
        throw err;
      });
      await checked;
      const ip = clientIP(req, { trusted, ipv6Prefix: opts.ipv6Prefix });
      const d = await client.limits.consume(scene, opts.id, { ip });
      for (const [k, v] of Object.entries(d.headers)) res.setHeader(k, v);
      if (d.allowed) return pass(next);
      sendProblem(res, 429, {
        type: "about:blank", title: "Too Many Requests", status: 429,
        detail: `request ${scene}/${opts.id} at most as often as the policy allows; retry after ${d.headers["Retry-After"] ?? "?"}s`,
        ...d, headers: undefined,
      });
      return false;
    } catch (err) {
      if (err instanceof UnavailableError) {
        if (err.status === 0 && opts.unreachable !== "closed") return pass(next);
        sendError(res, err); // a fail-closed scene's store is down: 503 with Retry-After
        return false;
      }
      if (next) {
        next(err);
        return false;
      }
      throw err;
    }
  };
}

/** withIPLimit wraps a Next.js API route handler. */
export function withIPLimit<Req extends RequestLike, Res extends ResponseLike>(
  opts: IPLimitOptions,
  handler: (req: Req, res: Res) => unknown,
): (req: Req, res: Res) => Promise<unknown> {
  const limit = useIPFrequencyLimit(opts);
  return async (req, res) => ((await limit(req, res)) ? handler(req, res) : undefined);
}

/**
 * sendError answers a SluiceError the way the server did: status, its
 * rate-limit headers and Retry-After, and the problem body. Use it for a
 * LimitedError from limits.assert in a route (member or team limits).
 */
export function sendError(res: ResponseLike, err: SluiceError): void {
  for (const name of ["RateLimit", "RateLimit-Policy", "Retry-After"]) {
    const v = err.headers.get(name);
    if (v !== null) res.setHeader(name, v);
  }
  if (err.retryAfter !== undefined) res.setHeader("Retry-After", String(err.retryAfter));
  const status = err.status === 0 ? 503 : err.status;
  sendProblem(res, status, { type: err.type, title: err.title, status, detail: err.detail, ...err.body });
}

function sendProblem(res: ResponseLike, status: number, body: Record<string, unknown>): void {
  if (res.headersSent) return;
  res.statusCode = status;
  res.setHeader("Content-Type", "application/problem+json");
  res.end(JSON.stringify(body));
}

function pass(next?: (err?: unknown) => void): boolean {
  next?.();
  return true;
}

async function checkPolicy(client: Sluice, scene: string, opts: IPLimitOptions): Promise<void> {
  if (opts.limit === undefined && opts.seconds === undefined) return;
  const scenes = (await client.limits.list()).scenes ?? [];
  const pol = scenes.find((s) => s.name === scene)?.policies?.find((p) => p.name === opts.id);
  const want = `${opts.limit ?? "?"} per ${opts.seconds ?? "?"}s`;
  if (!pol) throw new InvalidError({ status: 0, title: "Not configured", detail: `scene ${scene} has no policy ${opts.id} (want ${want}): add it to sluice.yaml` });
  const match = (pol.limits ?? []).some(
    (l) => (opts.limit === undefined || l.quota === opts.limit) && (opts.seconds === undefined || l.window_ms === opts.seconds * 1000),
  );
  if (!match) throw new InvalidError({ status: 0, title: "Mismatch", detail: `${scene}/${opts.id} on the server is not ${want}: change sluice.yaml or the route` });
}
