import { seg, type Transport } from "./http.js";
import type { WaitOptions } from "./jobs.js";
import { longPoll, longPollRequest } from "./wait.js";
import type { Group, GroupSpec, Tenant, TenantSettings } from "./types.js";

/**
 * Groups are batches with a life of their own (a crawl): a concurrency
 * cap, a least interval between starts, live progress, cancel as a whole,
 * and one completion job when every job has finished.
 */
export class Groups {
  readonly #t: Transport;
  constructor(t: Transport) {
    this.#t = t;
  }

  /** create makes a group; create it before enqueuing its jobs. */
  async create(spec: GroupSpec, signal?: AbortSignal): Promise<Group> {
    return (await this.#t.request<Group>("POST", "/v1/groups", { body: spec, signal })).body;
  }

  async get(id: string, signal?: AbortSignal): Promise<Group> {
    return (await this.#t.request<Group>("GET", `/v1/groups/${seg(id)}`, { signal })).body;
  }

  /** cancel cancels the jobs not started and asks running ones to stop. */
  async cancel(id: string, signal?: AbortSignal): Promise<Group> {
    return (await this.#t.request<Group>("POST", `/v1/groups/${seg(id)}/cancel`, { signal })).body;
  }

  /**
   * wait resolves once every job of the group has finished. It long-polls
   * (GET /v1/groups/{id}?wait=) as Jobs.wait does.
   */
  async wait(id: string, opts: WaitOptions = {}): Promise<Group> {
    const read = async (waitMs: number) =>
      (await this.#t.request<Group>("GET", `/v1/groups/${seg(id)}`, longPollRequest(waitMs, opts.signal))).body;
    return longPoll(read, (g) => g.done === true, opts);
  }
}

/** Options of Tenants.list. */
export interface TenantListOptions {
  order?: "name" | "busiest";
  limit?: number;
  cursor?: string;
  signal?: AbortSignal;
}

/** Tenants reads and sets per-tenant fairness: concurrency, weight, backlog. */
export class Tenants {
  readonly #t: Transport;
  constructor(t: Transport) {
    this.#t = t;
  }

  async list(opts: TenantListOptions = {}): Promise<{ tenants?: Tenant[]; next?: string }> {
    const { signal, ...query } = opts;
    return (await this.#t.request<{ tenants?: Tenant[]; next?: string }>("GET", "/v1/tenants", { query, signal })).body;
  }

  async get(tenant: string, signal?: AbortSignal): Promise<Tenant> {
    return (await this.#t.request<Tenant>("GET", `/v1/tenants/${seg(tenant)}`, { signal })).body;
  }

  /** set replaces the tenant's own settings; zero fields follow the defaults. Admin. */
  async set(tenant: string, settings: TenantSettings, signal?: AbortSignal): Promise<Tenant> {
    return (await this.#t.request<Tenant>("PUT", `/v1/tenants/${seg(tenant)}`, { body: settings, signal })).body;
  }

  /** setLimit changes only the concurrency (0 the default, -1 unlimited). Admin. */
  async setLimit(tenant: string, concurrency: number, signal?: AbortSignal): Promise<Tenant> {
    const r = await this.#t.request<Tenant>("PUT", `/v1/tenants/${seg(tenant)}/limit`, { body: { concurrency }, signal });
    return r.body;
  }
}
