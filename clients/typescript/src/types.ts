// Names for the server's schemas. Every type here comes from the OpenAPI
// document (src/generated is written from server/openapi.yaml at build
// time), so a field renamed on the server breaks this package's build.
import type { components } from "./generated/openapi.js";

type S = components["schemas"];

export type Job = S["Job"];
export type JobState = S["State"];
export type JobSpec = S["JobSpec"];
export type Enqueued = S["Enqueued"];
export type JobList = S["JobList"];
export type Decision = S["Decision"];
export type LimitResult = S["LimitResult"];
export type LimitRequest = S["LimitRequest"];
export type SceneList = S["SceneList"];
export type Lease = NonNullable<S["Leases"]["leases"]>[number];
export type LeaseRequest = S["LeaseRequest"];
export type HeartbeatResult = S["HeartbeatResult"];
export type GroupSpec = S["GroupSpec"];
export type Group = S["Group"];
export type Tenant = S["Tenant"];
export type TenantSettings = S["TenantSettings"];
export type QueueStats = S["Stats"];
export type QueuePause = S["QueuePause"];
export type Problem = S["Problem"];
export type Acquisition = S["Acquisition"];

/** A subject: every subject field of the scene, as strings or integers. */
export type Subject = LimitRequest["subject"];

/** The states a job does not leave on its own. */
export const FINISHED_STATES: readonly JobState[] = ["completed", "failed", "cancelled"];
