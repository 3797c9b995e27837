// The data types of the queue, defined in the leaf package queue/queuetype
// (where package queue/backend, the store contract, names them too) and
// re-exported here so that users of the queue need only this package.

package queue

import "github.com/sluicehq/sluice/queue/queuetype"

// Enqueued is the outcome of one spec in Client.EnqueueBatch (and a store's Enqueue).
type Enqueued = queuetype.Enqueued

// ListFilter selects jobs for List.
type ListFilter = queuetype.ListFilter

// ListOrder is the order List returns jobs in.
type ListOrder = queuetype.ListOrder

// The orders of List, by enqueue sequence.
const (
	OldestFirst = queuetype.OldestFirst
	NewestFirst = queuetype.NewestFirst
)

// Page is one page of a listing.
type Page = queuetype.Page

// QueueStats counts one queue's jobs by state.
type QueueStats = queuetype.QueueStats

// Retention says how long finished jobs are kept before the cleaner deletes them.
type Retention = queuetype.Retention

// Default retention periods.
const (
	DefaultRetainCompleted = queuetype.DefaultRetainCompleted
	DefaultRetainFailed    = queuetype.DefaultRetainFailed
	DefaultRetainCancelled = queuetype.DefaultRetainCancelled
)

// Capability is one optional feature of a Backend.
type Capability = queuetype.Capability

// The capabilities a backend may have.
const (
	CapUnique        = queuetype.CapUnique
	CapList          = queuetype.CapList
	CapCancelPending = queuetype.CapCancelPending
	CapTenants       = queuetype.CapTenants
	CapGroups        = queuetype.CapGroups
	CapPriority      = queuetype.CapPriority
	CapDelay         = queuetype.CapDelay
	CapStrictOrder   = queuetype.CapStrictOrder
	CapClockDelays   = queuetype.CapClockDelays
	CapAtomicBatch   = queuetype.CapAtomicBatch
	CapRetry         = queuetype.CapRetry
	CapTenantList    = queuetype.CapTenantList
	CapFlows         = queuetype.CapFlows
	CapSchedules     = queuetype.CapSchedules
	CapProgress      = queuetype.CapProgress
	CapEvents        = queuetype.CapEvents
)

// Capabilities is a set of Capability values.
type Capabilities = queuetype.Capabilities

// AllCapabilities is the set of every capability.
const AllCapabilities = queuetype.AllCapabilities

// NewCapabilities returns the set of cs.
func NewCapabilities(cs ...Capability) Capabilities {
	return queuetype.NewCapabilities(cs...)
}

// ErrUnsupported is matched (errors.Is) by every *UnsupportedError.
var ErrUnsupported = queuetype.ErrUnsupported

// UnsupportedError says that a backend lacks a feature a call or a job asked for.
type UnsupportedError = queuetype.UnsupportedError

// The errors of the job store, matched with errors.Is.
var (
	ErrNotFound        = queuetype.ErrNotFound
	ErrLeaseLost       = queuetype.ErrLeaseLost
	ErrDuplicate       = queuetype.ErrDuplicate
	ErrJobFinished     = queuetype.ErrJobFinished
	ErrInvalidArgument = queuetype.ErrInvalidArgument
	ErrClosed          = queuetype.ErrClosed
)

// FieldPath says which field of a call's arguments broke a rule, in parts.
type FieldPath = queuetype.FieldPath

// Field returns the path of field name of struct type typ, such as Field("JobSpec", "UniqueKey").
func Field(typ, name string) FieldPath {
	return queuetype.Field(typ, name)
}

// InvalidArgumentError names the field and the rule it broke.
type InvalidArgumentError = queuetype.InvalidArgumentError

// ParentFailure is what a job does when one of its parents fails for good or is cancelled.
type ParentFailure = queuetype.ParentFailure

// The answers to a parent's failure.
const (
	ParentFailureCancel = queuetype.ParentFailureCancel
	ParentFailureRun    = queuetype.ParentFailureRun
)

// Flow is a stored flow: its jobs, with their edges in each job's DependsOn, in dependency order.
type Flow = queuetype.Flow

// JobRef names a job and where it is.
type JobRef = queuetype.JobRef

// ParentResult is a parent of a job, as its handler sees it.
type ParentResult = queuetype.ParentResult

// Relatives are a job's parents and children.
type Relatives = queuetype.Relatives

// GroupSpec describes a group: many jobs under one id, with limits of its own and a completion job.
type GroupSpec = queuetype.GroupSpec

// GroupProgress is a group's spec and where its jobs are.
type GroupProgress = queuetype.GroupProgress

// State is where a job is in its life.
type State = queuetype.State

// The states of a job.
const (
	StateScheduled = queuetype.StateScheduled
	StatePending   = queuetype.StatePending
	StateWaiting   = queuetype.StateWaiting
	StateActive    = queuetype.StateActive
	StateRetrying  = queuetype.StateRetrying
	StateCompleted = queuetype.StateCompleted
	StateFailed    = queuetype.StateFailed
	StateCancelled = queuetype.StateCancelled
	StateBlocked   = queuetype.StateBlocked
)

// States lists every state in lifecycle order.
var States = queuetype.States

// Defaults and limits for a JobSpec.
const (
	DefaultMaxAttempts = queuetype.DefaultMaxAttempts
	DefaultMaxPayload  = queuetype.DefaultMaxPayload
	MaxPriority        = queuetype.MaxPriority
	MaxNameLen         = queuetype.MaxNameLen
	MaxUniqueKeyLen    = queuetype.MaxUniqueKeyLen
	MaxErrorHistory    = queuetype.MaxErrorHistory
	MaxErrorLen        = queuetype.MaxErrorLen
)

// JobSpec describes a job to enqueue.
type JobSpec = queuetype.JobSpec

// Job is a stored job: its spec plus what happened to it.
type Job = queuetype.Job

// AttemptError records one failed attempt.
type AttemptError = queuetype.AttemptError

// Lease is a job handed to a worker, with the token that fences every later transition of it.
type Lease = queuetype.Lease

// Bounds of a Webhook.
const (
	MaxWebhookSize    = queuetype.MaxWebhookSize
	MaxWebhookHeaders = queuetype.MaxWebhookHeaders
)

// Webhook is a receiver given with one job (JobSpec.Webhook) or one group (GroupSpec.Webhook).
type Webhook = queuetype.Webhook

// EventType names what happened to a job or group.
type EventType = queuetype.EventType

// The event types a backend's outbox records.
const (
	EventJobCompleted   = queuetype.EventJobCompleted
	EventJobFailed      = queuetype.EventJobFailed
	EventJobCancelled   = queuetype.EventJobCancelled
	EventGroupCompleted = queuetype.EventGroupCompleted
)

// EventTypes lists every event type.
var EventTypes = queuetype.EventTypes

// Event is one thing that happened, as recorded in a backend's outbox.
type Event = queuetype.Event

// MaxProgressBytes bounds a progress report: the JSON of its percent and data together, in bytes.
const MaxProgressBytes = queuetype.MaxProgressBytes

// JobProgress is how far a running job says it has got.
type JobProgress = queuetype.JobProgress

// ErrNotInHandler is returned by ReportProgress called outside a job handler.
var ErrNotInHandler = queuetype.ErrNotInHandler

// More bounds of a JobSpec.
const (
	MaxDuration      = queuetype.MaxDuration
	MaxAttemptsLimit = queuetype.MaxAttemptsLimit
)

// Unlimited, as a TenantConfig.Limit or Backlog, lifts the bound.
const Unlimited = queuetype.Unlimited

// Bounds and defaults of tenant settings.
const (
	DefaultWeight  = queuetype.DefaultWeight
	MaxWeight      = queuetype.MaxWeight
	MinBacklog     = queuetype.MinBacklog
	BacklogPerSlot = queuetype.BacklogPerSlot
	MaxBacklog     = queuetype.MaxBacklog
)

// DefaultBacklog is the backlog cap of a tenant whose concurrency limit is limit and whose own cap is not set.
func DefaultBacklog(limit int) int {
	return queuetype.DefaultBacklog(limit)
}

// TenantConfig holds the scheduling settings of a tenant, or the defaults of every tenant.
type TenantConfig = queuetype.TenantConfig

// TenantInfo is a tenant's settings and current load.
type TenantInfo = queuetype.TenantInfo

// ScopeKind names what a Scope covers.
type ScopeKind = queuetype.ScopeKind

// The kinds of scope BackOff and start rates apply to.
const (
	ScopeTenant = queuetype.ScopeTenant
	ScopeGroup  = queuetype.ScopeGroup
	ScopeQueue  = queuetype.ScopeQueue
)

// Scope is a tenant, a group or a queue: what Client.BackOff pauses and a start rate counts.
type Scope = queuetype.Scope

// TenantOrder is the order Client.Tenants returns tenants in.
type TenantOrder = queuetype.TenantOrder

// The orders of a tenant listing.
const (
	TenantsByName  = queuetype.TenantsByName
	TenantsBusiest = queuetype.TenantsBusiest
)

// TenantFilter selects a page of tenants for Client.Tenants.
type TenantFilter = queuetype.TenantFilter

// TenantPage is one page of tenants.
type TenantPage = queuetype.TenantPage

// CheckText returns an *InvalidArgumentError naming field when v holds a NUL byte or invalid UTF-8.
func CheckText(field FieldPath, v string) error {
	return queuetype.CheckText(field, v)
}

// MaxAgingStep bounds the aging step of a queue.
const MaxAgingStep = queuetype.MaxAgingStep

// DefaultCompletionQueue is where a group's completion job goes when its GroupSpec names no queue.
const DefaultCompletionQueue = queuetype.DefaultCompletionQueue

// CompletionReport is the payload of a completion job whose GroupSpec has no CompletionPayload.
type CompletionReport = queuetype.CompletionReport
