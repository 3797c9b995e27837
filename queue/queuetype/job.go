package queuetype

import "time"

// State is where a job is in its life. The transitions:
//
//	scheduled → pending    its RunAt is due
//	retrying  → pending    its backoff is over
//	pending   → active     a worker leased it
//	active    → completed  the handler succeeded
//	active    → retrying   the handler failed and attempts are left
//	active    → failed     a permanent error, the last attempt, or MaxStalls stalls
//	active    → pending    given back on shutdown, or its lease expired (a stall)
//	active    → scheduled  the handler snoozed
//
// With tenant or group limits (backend.TenantBackend, backend.GroupBackend), a job that
// becomes ready may wait instead:
//
//	scheduled, retrying, active → waiting   ready, but its tenant or group has no room or is paused
//	pending   → waiting    Lease found its tenant or group full or paused
//	waiting   → pending    room freed: released best first
//	waiting   → failed     it waited longer than its tenant's MaxWait
//
// A job that depends on others (JobSpec.DependsOn, a flow) waits for them
// first (on a backend with CapFlows):
//
//	blocked → scheduled, pending   every parent has completed (or ended,
//	                               with OnParentFailure "run"): it becomes
//	                               ready by the same path as any job
//	blocked → cancelled            a parent failed or was cancelled
//	cancelled → blocked            that parent was retried by hand
//
// Any state that is not final can end in cancelled. A job in a final state
// (completed, failed, cancelled) changes no more by itself; the cleaner
// removes it once its retention has passed. Only an operator brings one
// back (queue.Client.Retry, on a backend with CapRetry):
//
//	failed, cancelled → pending, or waiting   retried by hand with fresh attempts
type State string

const (
	// StateScheduled is a job whose RunAt is in the future (enqueued with a
	// delay, or snoozed). It becomes pending when due.
	StateScheduled State = "scheduled"
	// StatePending is a job ready to run, waiting for a worker.
	StatePending State = "pending"
	// StateWaiting is a ready job held back by a scheduling limit (a
	// tenant's or group's concurrency or start rate) until a slot frees. It
	// is reserved for the tenant scheduler; the engine itself never puts a
	// job in it, but every backend must accept it wherever it accepts
	// StatePending in listing, stats and cancellation.
	StateWaiting State = "waiting"
	// StateActive is a job leased by a worker. An active job always has a
	// lease token and a deadline, written in the same step that made it
	// active.
	StateActive State = "active"
	// StateRetrying is a job whose last attempt failed and that will run
	// again at RunAt. It becomes pending when due.
	StateRetrying State = "retrying"
	// StateCompleted is a job whose handler succeeded. Final.
	StateCompleted State = "completed"
	// StateFailed is a job that failed for good: a permanent error, its
	// last attempt, or too many stalls. Final.
	StateFailed State = "failed"
	// StateCancelled is a job cancelled before it finished. Final.
	StateCancelled State = "cancelled"
	// StateBlocked is a job that waits for its parents (JobSpec.DependsOn,
	// a flow's edges) to complete; then it becomes ready like any other
	// job. BullMQ calls it waiting-children. Only a backend with CapFlows
	// puts a job in it.
	StateBlocked State = "blocked"
)

// States lists every state in lifecycle order.
var States = []State{
	StateScheduled, StatePending, StateWaiting, StateActive, StateRetrying,
	StateCompleted, StateFailed, StateCancelled, StateBlocked,
}

// Final reports whether s is completed, failed or cancelled: a job stays
// there, except that a failed or cancelled one may be retried by hand
// (queue.Client.Retry).
func (s State) Final() bool {
	return s == StateCompleted || s == StateFailed || s == StateCancelled
}

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	for _, k := range States {
		if s == k {
			return true
		}
	}
	return false
}

// Defaults and limits for a JobSpec.
const (
	// DefaultMaxAttempts is used when JobSpec.MaxAttempts is zero.
	DefaultMaxAttempts = 25
	// DefaultMaxPayload is the payload size limit when none is configured.
	DefaultMaxPayload = 1 << 20
	// MaxPriority is the largest allowed JobSpec.Priority. It is bounded so
	// a backend can pack priority and enqueue order into one sort key.
	MaxPriority = 1<<20 - 1
	// MaxNameLen bounds Queue, Kind, Tenant and Group, in bytes.
	MaxNameLen = 255
	// MaxUniqueKeyLen bounds UniqueKey, in bytes.
	MaxUniqueKeyLen = 1024
	// MaxErrorHistory is how many of the most recent attempt errors a
	// backend keeps in Job.Errors.
	MaxErrorHistory = 20
	// MaxErrorLen bounds one recorded error message, in bytes; the worker
	// cuts longer ones (a panic's stack included).
	MaxErrorLen = 8 << 10
)

// JobSpec describes a job to enqueue.
type JobSpec struct {
	// Queue names the queue; workers lease from named queues. Required.
	Queue string
	// Kind selects the handler (Worker.Handle). Required.
	Kind string
	// Payload is handed to the handler as is. At most the client's
	// MaxPayload bytes (default 1 MiB).
	Payload []byte
	// Tenant is the account the job runs for. Optional; the tenant
	// scheduler uses it for per-tenant limits and fairness.
	Tenant string
	// Priority orders ready jobs: a lower number runs first; equal
	// priorities run in enqueue order. 0 (the default) is the most urgent;
	// at most MaxPriority.
	Priority int
	// RunAt delays the job: it stays scheduled until then, at most
	// MaxDuration (100 years) ahead. The zero value (or a time not after
	// now) makes it pending at once.
	RunAt time.Time
	// MaxAttempts is how many times the handler may run before the job
	// fails for good, at most MaxAttemptsLimit (1000). Zero means
	// DefaultMaxAttempts (25). Attempts given back by Snooze, graceful
	// shutdown or a stall do not count.
	MaxAttempts int
	// Timeout bounds one attempt: the handler's context ends after it and
	// the attempt fails (and may be retried). Zero means no limit other
	// than the lease; at most MaxDuration.
	Timeout time.Duration
	// UniqueKey, when set, makes the job unique within its queue: enqueuing
	// another job with the same Queue and UniqueKey while the key is held
	// returns the existing job and ErrDuplicate.
	UniqueKey string
	// UniqueFor is how long the key is held, from enqueue, at most
	// MaxDuration. Zero holds it until the job reaches a final state.
	// Requires UniqueKey.
	UniqueFor time.Duration
	// Group ties jobs together (such as the pages of one crawl). Optional;
	// the group scheduler uses it for per-group limits and completion.
	Group string
	// DependsOn lists the ids of jobs that must complete before this one
	// runs (its parents), at most MaxParents, each stored already on the
	// same backend. Until they have, the job is blocked. Needs CapFlows.
	DependsOn []string
	// OnParentFailure says what happens when a parent fails for good or
	// is cancelled: ParentFailureCancel (the default, "") cancels this job
	// too, naming the parent in its LastError; ParentFailureRun lets it
	// run anyway once every other parent has ended.
	OnParentFailure ParentFailure
	// Webhook, when set, receives this job's events (see Webhook).
	// Optional; needs a backend with an outbox.
	Webhook *Webhook
	// Trace is the W3C trace context of the call that enqueued the job:
	// a traceparent, then a space and the tracestate when there is one.
	// queue.Client.Enqueue sets it from ctx when tracing is on (ClientConfig.
	// TracerProvider) and a worker continues that trace; an HTTP caller's
	// traceparent header lands here. At most MaxTraceLen bytes.
	Trace string
}

// Job is a stored job: its spec plus what happened to it. Backends keep
// timestamps to at least millisecond precision.
type Job struct {
	JobSpec

	// ID is assigned by the backend, unique within it, and opaque.
	ID string
	// State is where the job is now.
	State State
	// Attempt is the number of attempts spent, counting the running one:
	// 1 while the first attempt runs. An attempt given back (snooze,
	// graceful shutdown, stall) is subtracted again.
	Attempt int
	// Stalls counts leases that expired without the worker finishing
	// (the worker crashed or hung).
	Stalls int
	// LastError is the error of the latest failed attempt, if any.
	LastError string
	// Errors is the history of failed attempts, oldest first, at most
	// MaxErrorHistory entries (the newest are kept).
	Errors []AttemptError
	// Result is what the handler returned on success.
	Result []byte
	// CancelRequested is set by Cancel on an active job: the running
	// handler's context is cancelled and the job ends cancelled once its
	// worker lets go of it (or its lease expires).
	CancelRequested bool
	// WorkerID names the worker holding the lease while active.
	WorkerID string
	// LeaseUntil is the lease deadline while active; zero otherwise.
	LeaseUntil time.Time
	// CreatedAt is when the job was enqueued.
	CreatedAt time.Time
	// UpdatedAt is when the job last changed.
	UpdatedAt time.Time
	// StartedAt is when the latest attempt started; zero before the first.
	StartedAt time.Time
	// FinishedAt is when the job reached a final state; zero before.
	FinishedAt time.Time
	// Flow is the id of the flow the job belongs to (queue.Client.EnqueueFlow),
	// and FlowNode its name there; both empty for a job of no flow.
	Flow, FlowNode string
	// Parents are the jobs it depends on, with their states and results,
	// as the Client's Get and a Worker's lease hand them out (a backend's
	// own Get leaves them empty). Results are bounded: see
	// MaxParentResults.
	Parents []ParentResult
	// Progress is the latest progress its handler reported (see
	// queue.ReportProgress), kept after the job ends; nil when none was.
	Progress *JobProgress
}

// AttemptError records one failed attempt.
type AttemptError struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

// Lease is a job handed to a worker, with the token that fences every later
// transition of this attempt. The deadline is Job.LeaseUntil.
type Lease struct {
	Job   *Job
	Token string
}
