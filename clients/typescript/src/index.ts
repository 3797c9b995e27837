// @sluicehq/sluice: a client of `sluice serve`. The main entry has no
// Node-only imports, so producers run in browsers too; the HTTP middleware
// is at "@sluicehq/sluice/middleware".
export { Sluice } from "./client.js";
export type { ClientOptions, RequestOptions, Reply } from "./http.js";
export { Transport } from "./http.js";
export { Limits, type LimitDecision, type LimitOptions, type AllowOptions } from "./limits.js";
export { Jobs, type ListOptions, type WaitOptions } from "./jobs.js";
export { Groups, Tenants, type TenantListOptions } from "./groups.js";
export {
  Worker, Snooze, JobFailure, permanent,
  type WorkerOptions, type Handler, type JobContext, type AbortCause, type Usage,
} from "./worker.js";
export {
  SluiceError, LimitedError, InvalidError, UnavailableError, ConflictError,
  NotFoundError, AuthError, NotImplementedError, type ProblemInit,
} from "./errors.js";
export * from "./types.js";
