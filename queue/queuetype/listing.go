package queuetype

import "time"

// Enqueued is the outcome of one spec in backend.Backend.Enqueue.
type Enqueued struct {
	// Job is the new job, or the existing one when Duplicate.
	Job *Job
	// Duplicate is true when the spec's unique key was held by Job and
	// nothing was stored.
	Duplicate bool
}

// ListFilter selects jobs for List. Zero fields do not filter; the
// fields that are set must all match.
type ListFilter struct {
	// Queue limits the list to one queue; empty lists all queues.
	Queue string
	// States limits the list to these states; empty lists all.
	States []State
	// Tenant, Kind and Group limit the list to jobs whose JobSpec field
	// of that name equals the value exactly.
	Tenant, Kind, Group string
	// Order is OldestFirst (the default) or NewestFirst. A cursor belongs
	// to the order it was read in.
	Order ListOrder
	// Limit is the page size: default 100, at most 1000.
	Limit int
	// Cursor continues from a previous Page.Next.
	Cursor string
}

// ListOrder is the order List returns jobs in.
type ListOrder string

// The orders of List, by enqueue sequence.
const (
	// OldestFirst lists in enqueue order; the zero ListOrder means it.
	OldestFirst ListOrder = "oldest"
	// NewestFirst lists the latest enqueued job first.
	NewestFirst ListOrder = "newest"
)

// Newest reports whether o is NewestFirst.
func (o ListOrder) Newest() bool { return o == NewestFirst }

// Valid reports whether o is OldestFirst, NewestFirst or empty.
func (o ListOrder) Valid() bool { return o == "" || o == OldestFirst || o == NewestFirst }

// Validate returns an *InvalidArgumentError naming the first field of f
// that breaks a rule: an unknown state or order, a negative limit, or a
// name longer than MaxNameLen or holding control characters.
func (f ListFilter) Validate() error {
	if f.Limit < 0 {
		return InvalidArgument(Field("ListFilter", "Limit"), "must not be negative, got %d", f.Limit)
	}
	for _, s := range f.States {
		if !s.Valid() {
			return InvalidArgument(Field("ListFilter", "States"), "has unknown state %q", s)
		}
	}
	if !f.Order.Valid() {
		return InvalidArgument(Field("ListFilter", "Order"), "must be %q or %q, got %q", OldestFirst, NewestFirst, f.Order)
	}
	names := []struct {
		field FieldPath
		v     string
	}{
		{Field("ListFilter", "Queue"), f.Queue}, {Field("ListFilter", "Tenant"), f.Tenant},
		{Field("ListFilter", "Kind"), f.Kind}, {Field("ListFilter", "Group"), f.Group},
	}
	for _, n := range names {
		if err := ValidName(n.field, n.v, false); err != nil {
			return err
		}
	}
	return nil
}

// Page is one page of a listing.
type Page struct {
	Jobs []*Job
	// Next is the cursor of the next page; empty when there is none.
	Next string
}

// QueueStats counts one queue's jobs by state. States with no jobs may be
// missing from Counts.
type QueueStats struct {
	Queue  string
	Counts map[State]int64
	// PausedUntil is the end of a pause of the queue in force
	// (backend.TenantBackend.Pause on QueueScope); zero when it is not paused or
	// the backend does not report pauses.
	PausedUntil time.Time
}

// Retention says how long finished jobs are kept before the cleaner deletes
// them. A zero field means its default; a negative one keeps forever.
type Retention struct {
	// Completed jobs are kept this long after finishing; default 24h.
	Completed time.Duration
	// Failed jobs are kept this long after failing; default 7 days.
	Failed time.Duration
	// Cancelled jobs are kept this long after cancelling; default 24h.
	Cancelled time.Duration
}

// Default retention periods.
const (
	DefaultRetainCompleted = 24 * time.Hour
	DefaultRetainFailed    = 7 * 24 * time.Hour
	DefaultRetainCancelled = 24 * time.Hour
)

// WithDefaults returns r with zero fields set to their defaults.
func (r Retention) WithDefaults() Retention {
	if r.Completed == 0 {
		r.Completed = DefaultRetainCompleted
	}
	if r.Failed == 0 {
		r.Failed = DefaultRetainFailed
	}
	if r.Cancelled == 0 {
		r.Cancelled = DefaultRetainCancelled
	}
	return r
}

// For returns the retention of final state s (after defaults), and false
// when s is not final.
func (r Retention) For(s State) (time.Duration, bool) {
	switch s {
	case StateCompleted:
		return r.Completed, true
	case StateFailed:
		return r.Failed, true
	case StateCancelled:
		return r.Cancelled, true
	}
	return 0, false
}
