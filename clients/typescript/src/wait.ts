// Waiting for a job or group to end by long-polling the server, which
// answers as soon as it ends: one request per 30 s of waiting instead of
// a poll every second.
import type { RequestOptions } from "./http.js";
import type { WaitOptions } from "./jobs.js";

/** The longest wait one long-poll asks for (the server allows 60 s). */
export const LONG_POLL_MS = 30_000;
/** Added to a long-poll's own length for its request's timeout. */
export const LONG_POLL_GRACE_MS = 10_000;

/** longPollRequest is a GET that asks the server to wait up to waitMs. */
export function longPollRequest(waitMs: number, signal?: AbortSignal): RequestOptions {
  return { query: { wait: `${waitMs}ms` }, signal, timeoutMs: waitMs + LONG_POLL_GRACE_MS };
}

/**
 * longPoll calls read(waitMs), which long-polls for up to waitMs, until
 * done(value), within opts.timeoutMs overall. An answer that comes well
 * before the wait it asked for without being done (a server that does not
 * long-poll) is followed by a pause, 25ms at first and doubling up to
 * opts.maxPollMs, as a poll. It rejects with the signal's reason, or a
 * TimeoutError.
 */
export async function longPoll<T>(read: (waitMs: number) => Promise<T>, done: (v: T) => boolean, opts: WaitOptions): Promise<T> {
  const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
  let pause = 25;
  for (;;) {
    const waitMs = Math.floor(Math.max(0, Math.min(LONG_POLL_MS, deadline - Date.now())));
    const asked = Date.now();
    const v = await read(waitMs);
    if (done(v)) return v;
    const left = deadline - Date.now();
    if (left <= 0) throw new DOMException("sluice: wait timed out", "TimeoutError");
    if (Date.now() - asked < waitMs / 2) {
      await sleep(Math.min(pause, left), opts.signal);
      pause = Math.min(pause * 2, opts.maxPollMs ?? 1000);
    }
  }
}

/** sleep resolves after ms, or rejects with the signal's reason. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
