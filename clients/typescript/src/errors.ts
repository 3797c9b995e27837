// Errors mirror the server's application/problem+json answers (RFC 9457):
// one class per kind of answer a caller acts on differently.
import type { Decision } from "./types.js";

/** Fields of a problem answer, plus what the HTTP exchange said. */
export interface ProblemInit {
  status: number;
  title?: string;
  detail?: string;
  type?: string;
  /** Seconds from the Retry-After header, when the server sent one. */
  retryAfter?: number;
  /** The whole decoded body. */
  body?: Record<string, unknown>;
  headers?: Headers;
}

/** Every error this package throws for a server answer is a SluiceError. */
export class SluiceError extends Error {
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly type: string;
  /** Seconds to wait before trying again (Retry-After), if the server said. */
  readonly retryAfter: number | undefined;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;

  constructor(init: ProblemInit) {
    const title = init.title ?? `HTTP ${init.status}`;
    super(init.detail ? `sluice: ${init.status} ${title}: ${init.detail}` : `sluice: ${init.status} ${title}`);
    this.name = new.target.name;
    this.status = init.status;
    this.title = title;
    this.detail = init.detail ?? "";
    this.type = init.type ?? "about:blank";
    this.retryAfter = init.retryAfter;
    this.body = init.body ?? {};
    this.headers = init.headers ?? new Headers();
  }
}

/** 429: over a rate limit. Nothing was counted; retry after `retryAfter`. */
export class LimitedError extends SluiceError {
  /** The decision the server answered with (limits, retry_after_ms). */
  get decision(): Decision {
    return this.body as Decision;
  }
  /** Milliseconds until the call may pass. */
  get retryAfterMs(): number {
    const ms = this.body["retry_after_ms"];
    return typeof ms === "number" ? ms : (this.retryAfter ?? 0) * 1000;
  }
}

/** 400, 413, 415 or 422: the request can never succeed as sent. */
export class InvalidError extends SluiceError {}

/** 503 (a store down or overloaded, or a fail-closed scene) or no answer. */
export class UnavailableError extends SluiceError {}

/** 409: lease lost, job already finished, group id taken. */
export class ConflictError extends SluiceError {}

/** 404: unknown scene, policy, job or group. */
export class NotFoundError extends SluiceError {}

/** 401 or 403: no valid token, or the token lacks the route's role. */
export class AuthError extends SluiceError {}

/** 501: the server's job backend lacks the feature. */
export class NotImplementedError extends SluiceError {}

/** parseRetryAfter reads Retry-After as seconds (delta form only). */
export function parseRetryAfter(v: string | null): number | undefined {
  if (v === null || !/^\d+$/.test(v.trim())) return undefined;
  return Number(v.trim());
}

/** problemError builds the error class that fits the status. */
export function problemError(init: ProblemInit): SluiceError {
  switch (true) {
    case init.status === 429:
      return new LimitedError(init);
    case init.status === 409:
      return new ConflictError(init);
    case init.status === 404:
      return new NotFoundError(init);
    case init.status === 401 || init.status === 403:
      return new AuthError(init);
    case init.status === 501:
      return new NotImplementedError(init);
    case init.status === 503 || init.status === 502 || init.status === 504:
      return new UnavailableError(init);
    case init.status >= 400 && init.status < 500:
      return new InvalidError(init);
    default:
      return new SluiceError(init);
  }
}
