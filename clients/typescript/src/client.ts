import { Groups, Tenants } from "./groups.js";
import { Transport, type ClientOptions } from "./http.js";
import { Jobs } from "./jobs.js";
import { Limits } from "./limits.js";

/**
 * Sluice is a client of `sluice serve`: rate limits, jobs, groups and
 * tenants over HTTP/JSON, with the server's problem answers thrown as
 * typed errors (LimitedError, InvalidError, UnavailableError,
 * ConflictError, ...). It holds no connection of its own and is safe to
 * share.
 *
 * @example
 * const sluice = new Sluice({ url: "http://127.0.0.1:8080", token });
 * await sluice.limits.assert("member", "export-usage", { member: "42" });
 * const { job } = await sluice.jobs.enqueue({ queue: "scrape", kind: "page", payload: { url } });
 */
export class Sluice {
  readonly transport: Transport;
  readonly limits: Limits;
  readonly jobs: Jobs;
  readonly groups: Groups;
  readonly tenants: Tenants;

  constructor(opts: ClientOptions = {}) {
    this.transport = new Transport(opts);
    this.limits = new Limits(this.transport);
    this.jobs = new Jobs(this.transport);
    this.groups = new Groups(this.transport);
    this.tenants = new Tenants(this.transport);
  }

  /** The server's OpenAPI document. */
  async openapi(signal?: AbortSignal): Promise<Record<string, unknown>> {
    return (await this.transport.request<Record<string, unknown>>("GET", "/v1/openapi.json", { signal })).body;
  }

  /** What the client's token may do. */
  async whoami(signal?: AbortSignal): Promise<{ name?: string; roles?: string[]; open?: boolean }> {
    return (await this.transport.request<{ name?: string; roles?: string[]; open?: boolean }>("GET", "/v1/whoami", { signal })).body;
  }
}
