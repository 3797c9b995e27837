package queuetype

import "time"

// GroupSpec describes a group: many jobs under one id (such as the pages
// of one crawl), with limits of its own and a job that runs once when they
// have all finished. The zero value of every field but ID is the default.
type GroupSpec struct {
	// ID names the group; jobs join it by JobSpec.Group. Required.
	ID string
	// Tenant is the tenant the completion job runs for; optional.
	Tenant string
	// MaxConcurrency is how many of the group's jobs may be active at
	// once; 0 means no limit.
	MaxConcurrency int
	// MinInterval is the least time between two starts of the group's
	// jobs (a crawl delay); 0 means none.
	MinInterval time.Duration
	// TTL bounds the group's life: TTL after its creation, its jobs that
	// have not started are cancelled and running ones are asked to stop,
	// as by CancelGroup. 0 means no bound.
	TTL time.Duration
	// CompletionKind is the kind of the job enqueued, exactly once, when
	// every job of the group has reached a final state; empty means no
	// completion job.
	CompletionKind string
	// CompletionQueue is the queue of the completion job; default
	// DefaultCompletionQueue ("default").
	CompletionQueue string
	// CompletionPayload is the completion job's payload. When empty, the
	// payload is the JSON of a CompletionReport.
	CompletionPayload []byte
	// Webhook, when set, receives the events of every job of the group
	// and the group's group.completed (see Webhook). Optional; needs a
	// backend with an outbox.
	Webhook *Webhook
}

// Validate returns an *InvalidArgumentError naming the first field that
// breaks a rule, with maxPayload bounding CompletionPayload
// (DefaultMaxPayload when zero or less).
func (g GroupSpec) Validate(maxPayload int) error {
	if maxPayload <= 0 {
		maxPayload = DefaultMaxPayload
	}
	checks := []struct {
		field    FieldPath
		v        string
		required bool
	}{
		{Field("GroupSpec", "ID"), g.ID, true},
		{Field("GroupSpec", "Tenant"), g.Tenant, false},
		{Field("GroupSpec", "CompletionKind"), g.CompletionKind, false},
		{Field("GroupSpec", "CompletionQueue"), g.CompletionQueue, false},
	}
	for _, c := range checks {
		if err := ValidName(c.field, c.v, c.required); err != nil {
			return err
		}
	}
	if err := ValidDuration(Field("GroupSpec", "MinInterval"), g.MinInterval); err != nil {
		return err
	}
	if err := ValidDuration(Field("GroupSpec", "TTL"), g.TTL); err != nil {
		return err
	}
	switch {
	case g.MaxConcurrency < 0:
		return InvalidArgument(Field("GroupSpec", "MaxConcurrency"), "must not be negative, got %d", g.MaxConcurrency)
	case len(g.CompletionPayload) > maxPayload:
		return InvalidArgument(Field("GroupSpec", "CompletionPayload"), "must be at most %d bytes, got %d", maxPayload, len(g.CompletionPayload))
	case g.CompletionKind == "" && (g.CompletionQueue != "" || len(g.CompletionPayload) > 0):
		return InvalidArgument(Field("GroupSpec", "CompletionKind"), "must be set when a completion queue or payload is")
	case g.Webhook != nil:
		return g.Webhook.Validate("GroupSpec")
	}
	return nil
}

// GroupProgress is a group's spec and where its jobs are.
type GroupProgress struct {
	GroupSpec
	// Jobs of the group in each state. Finished jobs stay counted after
	// the cleaner deletes them.
	Scheduled, Pending, Waiting, Active, Retrying int64
	Completed, Failed, Cancelled                  int64
	// Blocked counts the group's jobs waiting for their parents (a flow
	// in the group).
	Blocked int64
	// CancelRequested is set by CancelGroup (or the TTL): no job of the
	// group starts any more.
	CancelRequested bool
	// Done is set, once and for good, when the group had jobs and every
	// one of them reached a final state.
	Done bool
	// CompletionJobID is the id of the completion job, once enqueued.
	CompletionJobID string
	// PausedUntil is the end of a BackOff in force; zero when none.
	PausedUntil time.Time
	// CreatedAt is when the group was created; FinishedAt when it was
	// done (zero before).
	CreatedAt, FinishedAt time.Time
}

// Total is the number of jobs the group has had.
func (p GroupProgress) Total() int64 {
	return p.Unfinished() + p.Completed + p.Failed + p.Cancelled
}

// Unfinished is the number of the group's jobs not in a final state.
func (p GroupProgress) Unfinished() int64 {
	return p.Scheduled + p.Pending + p.Waiting + p.Active + p.Retrying + p.Blocked
}

// DefaultCompletionQueue is where a group's completion job goes when its
// GroupSpec names no queue.
const DefaultCompletionQueue = "default"

// CompletionReport is the payload of a completion job whose GroupSpec has
// no CompletionPayload.
type CompletionReport struct {
	Group           string `json:"group"`
	Total           int64  `json:"total"`
	Completed       int64  `json:"completed"`
	Failed          int64  `json:"failed"`
	Cancelled       int64  `json:"cancelled"`
	CancelRequested bool   `json:"cancel_requested,omitempty"`
}
