import { seg, type Transport } from "./http.js";
import { longPoll, longPollRequest } from "./wait.js";
import { FINISHED_STATES } from "./types.js";
import type { Enqueued, Job, JobList, JobSpec, JobState, QueuePause, QueueStats } from "./types.js";

/** Filters and paging of Jobs.list. */
export interface ListOptions {
  queue?: string;
  /** One state or several. */
  state?: JobState | JobState[];
  tenant?: string;
  kind?: string;
  group?: string;
  order?: "oldest" | "newest";
  /** Jobs per page, 1 to 1000. Default 100. */
  limit?: number;
  /** `next` of the previous page. */
  cursor?: string;
  signal?: AbortSignal;
}

/** Options of a wait. */
export interface WaitOptions {
  signal?: AbortSignal;
  /** Give up after this long with a timeout error. Default no bound. */
  timeoutMs?: number;
  /**
   * Longest pause between two reads when the server answers a long-poll
   * at once without the result (a server that does not long-poll).
   * Default 1000.
   */
  maxPollMs?: number;
}

/** Jobs enqueues and inspects jobs (role producer; retry needs admin). */
export class Jobs {
  readonly #t: Transport;
  constructor(t: Transport) {
    this.#t = t;
  }

  /** enqueue stores one job; `duplicate` is true when its unique key was held. */
  async enqueue(spec: JobSpec, signal?: AbortSignal): Promise<Enqueued> {
    return (await this.#t.request<Enqueued>("POST", "/v1/jobs", { body: spec, signal })).body;
  }

  /** batch stores up to 1000 jobs, all or nothing. */
  async batch(specs: JobSpec[], signal?: AbortSignal): Promise<Enqueued[]> {
    const r = await this.#t.request<{ jobs: Enqueued[] }>("POST", "/v1/jobs/batch", { body: { jobs: specs }, signal });
    return r.body.jobs;
  }

  async get(id: string, signal?: AbortSignal): Promise<Job> {
    return (await this.#t.request<Job>("GET", `/v1/jobs/${seg(id)}`, { signal })).body;
  }

  /** cancel: a job not started never runs; a running one is asked to stop. */
  async cancel(id: string, signal?: AbortSignal): Promise<Job> {
    return (await this.#t.request<Job>("POST", `/v1/jobs/${seg(id)}/cancel`, { signal })).body;
  }

  /** retry makes a failed or cancelled job ready again (role admin). */
  async retry(id: string, signal?: AbortSignal): Promise<Job> {
    return (await this.#t.request<Job>("POST", `/v1/jobs/${seg(id)}/retry`, { signal })).body;
  }

  /** list reads one page; keep paging while `next` is set. */
  async list(opts: ListOptions = {}): Promise<JobList> {
    const state = Array.isArray(opts.state) ? opts.state.join(",") : opts.state;
    const { signal, ...rest } = opts;
    const query = { ...rest, state } as Record<string, string | number | undefined>;
    return (await this.#t.request<JobList>("GET", "/v1/jobs", { query, signal })).body;
  }

  /** all iterates every job matching the filters, page after page. */
  async *all(opts: Omit<ListOptions, "cursor"> = {}): AsyncGenerator<Job> {
    let cursor: string | undefined;
    do {
      const page = await this.list({ ...opts, cursor });
      yield* page.jobs;
      cursor = page.next;
    } while (cursor);
  }

  /**
   * wait resolves with the job once it is completed, failed or cancelled.
   * It long-polls (GET /v1/jobs/{id}?wait=): the server answers as soon as
   * the job ends, so the result comes at once without polling.
   */
  async wait(id: string, opts: WaitOptions = {}): Promise<Job> {
    const read = async (waitMs: number) =>
      (await this.#t.request<Job>("GET", `/v1/jobs/${seg(id)}`, longPollRequest(waitMs, opts.signal))).body;
    return longPoll(read, (j) => FINISHED_STATES.includes(j.state), opts);
  }

  /** stats counts jobs per queue and state. */
  async stats(signal?: AbortSignal): Promise<QueueStats> {
    return (await this.#t.request<QueueStats>("GET", "/v1/queues/stats", { signal })).body;
  }

  /** pause stops leasing from a queue for durationMs (0: until resumed). Admin. */
  async pause(queue: string, durationMs = 0, signal?: AbortSignal): Promise<QueuePause> {
    const body = durationMs > 0 ? { duration_ms: durationMs } : {};
    return (await this.#t.request<QueuePause>("POST", `/v1/queues/${seg(queue)}/pause`, { body, signal })).body;
  }

  /** resume ends a queue's pause. Admin. */
  async resume(queue: string, signal?: AbortSignal): Promise<QueuePause> {
    return (await this.#t.request<QueuePause>("POST", `/v1/queues/${seg(queue)}/resume`, { signal })).body;
  }
}

export { sleep } from "./wait.js";
