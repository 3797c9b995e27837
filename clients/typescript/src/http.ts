// The one place this package speaks HTTP: JSON in, JSON or a typed
// problem error out. Only the global fetch is used, so it runs on Node 20+
// and in browsers alike.
import { problemError, parseRetryAfter, UnavailableError } from "./errors.js";

/** Options of a Sluice client. */
export interface ClientOptions {
  /** Base URL of `sluice serve`. Default http://127.0.0.1:8080. */
  url?: string;
  /** Bearer token; none when the server has no tokens (loopback only). */
  token?: string;
  /** The fetch to use. Default the global fetch. */
  fetch?: typeof fetch;
  /** Per-request timeout in milliseconds, except long-polls. Default 30000. */
  timeoutMs?: number;
}

/** One request. */
export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  signal?: AbortSignal;
  /** Statuses answered as a value, not thrown (such as 429 for consume). */
  accept?: number[];
  /** Overrides ClientOptions.timeoutMs; 0 means no timeout. */
  timeoutMs?: number;
}

/** An answer: status, headers and the decoded JSON body. */
export interface Reply<T> {
  status: number;
  headers: Headers;
  body: T;
}

/** Transport sends requests to the server. */
export class Transport {
  readonly url: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;

  constructor(opts: ClientOptions = {}) {
    this.url = (opts.url ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
    this.#token = opts.token;
    this.#fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.#timeoutMs = opts.timeoutMs ?? 30_000;
  }

  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<Reply<T>> {
    const url = new URL(this.url + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) {
      if (v !== undefined && v !== "") url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = { Accept: "application/json" };
    if (this.#token) headers["Authorization"] = `Bearer ${this.#token}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(opts.body);
    }
    const timeout = opts.timeoutMs ?? this.#timeoutMs;
    const signals = [opts.signal, timeout > 0 ? AbortSignal.timeout(timeout) : undefined].filter(
      (s): s is AbortSignal => s !== undefined,
    );
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    let res: Response;
    try {
      res = await this.#fetch(url, { method, headers, body, signal });
    } catch (err) {
      if (opts.signal?.aborted) throw err; // the caller's own cancellation
      throw new UnavailableError({ status: 0, title: "Unreachable", detail: `${method} ${url.pathname}: ${describe(err)}` });
    }
    const text = await res.text();
    let decoded: unknown = undefined;
    if (text !== "") {
      try {
        decoded = JSON.parse(text);
      } catch {
        decoded = { detail: text.slice(0, 512) };
      }
    }
    if (res.ok || opts.accept?.includes(res.status)) {
      return { status: res.status, headers: res.headers, body: decoded as T };
    }
    const p = (decoded ?? {}) as Record<string, unknown>;
    throw problemError({
      status: res.status,
      title: str(p["title"]),
      detail: str(p["detail"]),
      type: str(p["type"]),
      retryAfter: parseRetryAfter(res.headers.get("Retry-After")),
      body: p,
      headers: res.headers,
    });
  }
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as Error & { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}

/** seg escapes one path segment. */
export function seg(s: string): string {
  return encodeURIComponent(s);
}
