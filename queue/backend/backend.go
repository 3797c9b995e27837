package backend

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// Backend stores jobs. It is the contract every store (sqlitequeue,
// redisqueue) implements and that queue/queuetest checks.
//
// Rules that hold for every method:
//
//   - Atomic: each method is one atomic store operation (one SQL
//     transaction, one Lua script). Either all of its writes happen or none
//     do; no other caller ever sees a half-done transition.
//   - Fenced: the methods that take a lease token (Extend, Complete, Fail,
//     Snooze, Requeue) succeed only while the job is active and its stored
//     token equals the given one; otherwise they change nothing and return
//     ErrLeaseLost (ErrNotFound if the job does not exist). The deadline is
//     not checked by these methods: a late holder may still finish a job
//     that nobody has rescued yet. Once RescueExpired or Requeue has moved
//     the job, the old token is dead for good, because every lease gets a
//     fresh random token.
//   - No active job without a lease: the write that makes a job active
//     also writes its token, worker and deadline; the write that moves it
//     out of active clears them.
//   - Time: a backend reads "now" from its own clock (each backend's
//     Options.Clock, the real clock by default), never from the caller, so
//     tests can drive it with a fake clock. Durations passed in are added
//     to that now.
//   - Input: the Client validates specs and fills defaults (ValidateSpec,
//     MaxAttempts) and refuses specs that ask for a capability the
//     backend lacks (Features.CheckSpecs) before calling Enqueue; a
//     backend may assume valid input.
//   - Errors: ErrNotFound, ErrLeaseLost, ErrJobFinished and ErrClosed are
//     returned as is or wrapped (match with errors.Is); store faults are
//     returned wrapped with the backend's package name.
//
// Ordering: within a queue, ready jobs are leased by Priority (lower first),
// then by a per-backend monotonic enqueue sequence (FIFO). A job keeps its
// sequence for life, so a retried, snoozed or requeued job goes back to its
// original place among jobs of its priority once it is ready again. A
// backend that serves tenants (Features.Tenants) refines this: within a
// priority, jobs go by their fair start tag, given when a job first becomes
// ready (see TenantBackend), which is the same FIFO order for jobs of one
// tenant.
//
// Later scheduling layers (tenant limits with StateWaiting, groups, an event
// outbox) extend a backend through the optional parts its Features name;
// they hook into these same transitions, inside the same atomic step.
//
// This package also holds the helpers that writing a Backend needs, and
// package queue/queuetest the conformance suite every Backend passes.
type Backend interface {
	// Features returns the backend's name, its capabilities and its
	// optional parts. It is cheap and answers the same for the life of the
	// backend.
	Features() Features

	// Enqueue stores specs as new jobs, all in one atomic step, and returns
	// one Enqueued per spec in the same order.
	//
	// A spec whose RunAt is after now is stored scheduled; otherwise
	// pending. Each new job gets Attempt 0, CreatedAt = UpdatedAt = now and
	// a sequence number greater than every earlier one.
	//
	// Unique: when UniqueKey is set and a job with the same Queue and
	// UniqueKey holds the key, no job is stored for that spec; its Enqueued
	// carries the existing job and Duplicate = true. A job holds its key
	// until CreatedAt + UniqueFor when UniqueFor > 0, or until it reaches a
	// final state when UniqueFor is 0. A later spec in the same batch is a
	// duplicate of an earlier one with the same key.
	Enqueue(ctx context.Context, specs []queuetype.JobSpec) ([]queuetype.Enqueued, error)

	// Get returns the job, or ErrNotFound.
	Get(ctx context.Context, id string) (*queuetype.Job, error)

	// List returns one page of jobs matching f, in enqueue order (oldest
	// first, or newest first with f.Order NewestFirst), at most f.Limit
	// (default 100, at most 1000). Page.Next is the cursor of the
	// following page, empty on the last one. A backend that filters while
	// it scans may bound the work of one call: the page may then hold
	// fewer jobs than the limit (even none) with a Next to go on from;
	// only an empty Next ends the listing.
	List(ctx context.Context, f queuetype.ListFilter) (*queuetype.Page, error)

	// Stats returns the number of jobs per state for every queue that has
	// jobs or a pause in force (a paused queue without jobs has no
	// counts), sorted by queue name. It must not read every job's record
	// (count from indexes or per-state sets).
	Stats(ctx context.Context) ([]queuetype.QueueStats, error)

	// Cancel cancels a job that has not finished, atomically:
	//   - scheduled, pending, waiting, retrying: the job becomes cancelled
	//     (FinishedAt = now); it will never run.
	//   - active: the job stays active with CancelRequested = true; its
	//     worker sees that on its next Extend and cancels the handler. The
	//     holder's next Fail, Snooze or Requeue, or a rescue of its expired
	//     lease, ends the job cancelled; Complete still completes it (the
	//     work is done).
	//   - cancelled: nothing changes (idempotent).
	//   - completed, failed: nothing changes; the job and ErrJobFinished.
	// It returns the job as it is after the call, or ErrNotFound.
	Cancel(ctx context.Context, id string) (*queuetype.Job, error)

	// Lease hands up to req.Max ready jobs from req.Queues to a worker, in
	// one atomic step:
	//  1. scheduled and retrying jobs whose RunAt <= now become pending
	//     first; this uses an index on RunAt (a sorted set), touching only
	//     due jobs, never every job;
	//  2. the chosen pending jobs (by Priority, then sequence; across
	//     queues the lowest (Priority, sequence) wins, backends may
	//     approximate this across queues) become active with Attempt+1,
	//     a fresh random token, WorkerID = req.WorkerID, StartedAt = now
	//     and LeaseUntil = now + req.LeaseFor.
	// It returns no jobs (and no error) when none is ready. A job is handed
	// to one worker only.
	Lease(ctx context.Context, req LeaseRequest) ([]queuetype.Lease, error)

	// Extend renews a lease: LeaseUntil = now + leaseFor (it may shorten a
	// lease as well as lengthen it). It returns the new deadline and
	// whether the job has been cancelled meanwhile, which is how a running
	// handler learns of Cancel. Fenced.
	Extend(ctx context.Context, id, token string, leaseFor time.Duration) (LeaseStatus, error)

	// Complete ends an attempt in success: state completed, Result stored,
	// FinishedAt = now, lease cleared. Fenced.
	Complete(ctx context.Context, id, token string, result []byte) error

	// Fail ends an attempt in failure and returns the job's new state.
	// The error is recorded (LastError, and appended to Errors with the
	// attempt number and now, keeping the newest MaxErrorHistory). Then:
	//   - CancelRequested: cancelled;
	//   - f.Permanent, or Attempt >= MaxAttempts: failed (FinishedAt = now);
	//   - otherwise: retrying with RunAt = now + f.RetryIn.
	// The lease is cleared. Fenced. f.Error is recorded as
	// StorableError(f.Error): every store keeps the same text.
	Fail(ctx context.Context, id, token string, f Failure) (queuetype.State, error)

	// Snooze ends an attempt without spending it (Attempt-1) and runs the
	// job again after d: scheduled with RunAt = now + d, or pending when
	// d <= 0; cancelled when CancelRequested. Returns the new state.
	// The lease is cleared. Fenced.
	Snooze(ctx context.Context, id, token string, d time.Duration) (queuetype.State, error)

	// Requeue gives a leased job back at once without spending the attempt
	// (Attempt-1): pending (cancelled when CancelRequested). Workers call
	// it on graceful shutdown. Returns the new state. The lease is cleared.
	// Fenced.
	Requeue(ctx context.Context, id, token string) (queuetype.State, error)

	// RescueExpired finds active jobs in req.Queues (all queues when
	// empty) whose LeaseUntil < now, at most req.Limit of them (default
	// 1000), using an index on the deadline. Each one, in one atomic step,
	// gets Stalls+1 and its attempt back (Attempt-1), its lease cleared,
	// and becomes:
	//   - cancelled when CancelRequested;
	//   - failed, with LastError and Errors saying it stalled, when
	//     Stalls reaches req.MaxStalls (default 10);
	//   - pending otherwise.
	// It is idempotent and safe to run from every worker at once: a job is
	// rescued once per expiry.
	RescueExpired(ctx context.Context, req RescueRequest) (RescueResult, error)

	// Cleanup deletes jobs in a final state whose FinishedAt is at or
	// before now minus the retention of that state, oldest first, at most
	// req.Limit (default 1000) per call, from req.Queues (all when empty),
	// and returns how many it deleted. A negative retention keeps that state
	// forever; req.Retention has had defaults applied (zero means delete as
	// soon as finished). Deleting a job releases whatever it held (unique
	// key, indexes) in the same step.
	Cleanup(ctx context.Context, req CleanupRequest) (int, error)
}

// Notifier is served (Features.Notify) by backends that can wake idle
// workers when jobs may have become ready (enqueued, retried at once,
// requeued), so a worker need not wait a full poll interval. It is an optimisation: workers still
// poll, so a notification may be lost or spurious.
type Notifier interface {
	// Subscribe returns a channel that receives a value soon after jobs
	// in any of queues may have become ready, and a function that ends
	// the subscription. Sends never block: a subscriber that is not
	// listening misses the value but the channel keeps one buffered.
	Subscribe(queues []string) (<-chan struct{}, func())
}

// LeaseRequest asks Backend.Lease for work.
type LeaseRequest struct {
	// Queues to lease from; at least one.
	Queues []string
	// WorkerID is recorded on the leased jobs.
	WorkerID string
	// Max is how many jobs to lease at most; at least 1.
	Max int
	// LeaseFor is the lease length; positive.
	LeaseFor time.Duration
}

// RescueRequest asks Backend.RescueExpired to recover stalled jobs.
type RescueRequest struct {
	// Queues to look in; empty means all queues.
	Queues []string
	// MaxStalls is the stall count at which a job fails; 0 means
	// DefaultMaxStalls (10).
	MaxStalls int
	// Limit is how many jobs to rescue at most; 0 means 1000.
	Limit int
}

// RescueResult counts what RescueExpired did.
type RescueResult struct {
	Requeued  int // back to pending
	Failed    int // failed after MaxStalls
	Cancelled int // cancelled while running, then abandoned
}

// Total is the number of jobs rescued.
func (r RescueResult) Total() int { return r.Requeued + r.Failed + r.Cancelled }

// CleanupRequest asks Backend.Cleanup to delete expired finished jobs.
type CleanupRequest struct {
	// Queues to clean; empty means all queues.
	Queues []string
	// Retention per final state, defaults already applied
	// (Retention.WithDefaults).
	Retention queuetype.Retention
	// Limit is how many jobs to delete at most; 0 means 1000.
	Limit int
}

// DefaultBatchLimit is the per-call bound of RescueExpired and Cleanup when
// the request's Limit is zero.
const DefaultBatchLimit = 1000

// LeaseStatus is what Backend.Extend reports about a held lease.
type LeaseStatus struct {
	// Until is the new deadline.
	Until time.Time
	// CancelRequested is true when the job was cancelled while running.
	CancelRequested bool
}

// Failure describes a failed attempt for Backend.Fail.
type Failure struct {
	// Error is the attempt's error message (a panic includes its stack).
	Error string
	// RetryIn is the delay before the next attempt, if one remains.
	RetryIn time.Duration
	// Permanent fails the job for good, attempts left or not.
	Permanent bool
}
