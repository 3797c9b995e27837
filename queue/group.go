package queue

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// DefaultCompletionQueue is where a group's completion job goes when its
// GroupSpec names no queue.
const DefaultCompletionQueue = "default"

// Errors of groups.
var (
	// ErrGroupNotFound means no group has the given id.
	ErrGroupNotFound = errors.New("queue: group not found")
	// ErrGroupExists means CreateGroup was given an id already in use.
	ErrGroupExists = errors.New("queue: group already exists")
	// ErrGroupClosed means a job was enqueued into a group that is done or
	// cancelled; nothing was stored.
	ErrGroupClosed = errors.New("queue: group is done or cancelled")
)

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
		if err := validName(c.field, c.v, c.required); err != nil {
			return err
		}
	}
	if err := validDuration(Field("GroupSpec", "MinInterval"), g.MinInterval); err != nil {
		return err
	}
	if err := validDuration(Field("GroupSpec", "TTL"), g.TTL); err != nil {
		return err
	}
	switch {
	case g.MaxConcurrency < 0:
		return invalid(Field("GroupSpec", "MaxConcurrency"), "must not be negative, got %d", g.MaxConcurrency)
	case len(g.CompletionPayload) > maxPayload:
		return invalid(Field("GroupSpec", "CompletionPayload"), "must be at most %d bytes, got %d", maxPayload, len(g.CompletionPayload))
	case g.CompletionKind == "" && (g.CompletionQueue != "" || len(g.CompletionPayload) > 0):
		return invalid(Field("GroupSpec", "CompletionKind"), "must be set when a completion queue or payload is")
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

// CompletionJob returns the spec of the completion job of a group that is
// done with progress p, or false when its spec has no CompletionKind. Its
// UniqueKey is "group:" + the group id, so even a backend bug could not
// store it twice while it is unfinished.
func CompletionJob(p GroupProgress) (JobSpec, bool) {
	if p.CompletionKind == "" {
		return JobSpec{}, false
	}
	s := JobSpec{
		Queue: p.CompletionQueue, Kind: p.CompletionKind, Tenant: p.Tenant,
		Payload: p.CompletionPayload, UniqueKey: "group:" + p.ID, MaxAttempts: DefaultMaxAttempts,
	}
	if s.Queue == "" {
		s.Queue = DefaultCompletionQueue
	}
	if len(s.Payload) == 0 {
		s.Payload, _ = json.Marshal(CompletionReport{
			Group: p.ID, Total: p.Total(), Completed: p.Completed, Failed: p.Failed,
			Cancelled: p.Cancelled, CancelRequested: p.CancelRequested,
		})
	}
	return s, true
}

// GroupBackend is the part a Backend with CapGroups serves (Features.Groups).
//
// A job joins a group by JobSpec.Group. A group named by a job but never
// created is created with the zero GroupSpec (no limits, no completion
// job); a job naming a group that is done or cancel-requested fails the
// enqueue with ErrGroupClosed and nothing is stored.
//
// Limits: MaxConcurrency and MinInterval are admission rules like a
// tenant's limit (see TenantBackend): a ready job of the group is pending
// only while the group has room (active + pending < MaxConcurrency; with a
// MinInterval, no other pending job and at least MinInterval since the
// group's last start), otherwise it waits. Lease checks them again
// atomically and records the start time; a group paused by Pause starts
// nothing.
//
// Completion: in the same atomic step as the transition that leaves the
// group with jobs and none of them unfinished (complete, final fail,
// cancel, a rescue that fails or cancels, MaxWait expiry, CancelGroup),
// the group is marked done and, when it has a CompletionKind, the job
// CompletionJob(progress) is enqueued. The done mark is written only if it
// was not set, so concurrent last completions, retried transitions and
// rescues of crashed workers enqueue it exactly once.
type GroupBackend interface {
	// CreateGroup stores a new group, or returns ErrGroupExists.
	CreateGroup(ctx context.Context, spec GroupSpec) (*GroupProgress, error)
	// Group returns the group's progress, or ErrGroupNotFound.
	Group(ctx context.Context, id string) (*GroupProgress, error)
	// CancelGroup, in one atomic step, marks the group cancel-requested,
	// cancels its scheduled, pending, waiting and retrying jobs, and sets
	// CancelRequested on its active ones (as Cancel does). Cancelling a
	// cancelled or done group changes nothing. It returns the progress
	// after the call, or ErrGroupNotFound.
	CancelGroup(ctx context.Context, id string) (*GroupProgress, error)
}

// groups returns b's groups, or an *UnsupportedError.
func (c *Client) groups() (GroupBackend, error) {
	f := c.b.Features()
	if f.Groups == nil {
		return nil, f.unsupported(CapGroups)
	}
	return f.Groups, nil
}

// CreateGroup creates a group. Create it before enqueuing its jobs: a job
// that names an unknown group creates it with no limits and no completion
// job, and then CreateGroup returns ErrGroupExists.
func (c *Client) CreateGroup(ctx context.Context, spec GroupSpec) (*GroupProgress, error) {
	gb, err := c.groups()
	if err != nil {
		return nil, err
	}
	if err := spec.Validate(c.cfg.MaxPayload); err != nil {
		return nil, err
	}
	at := func(name string) FieldPath { return Field("GroupSpec", name) }
	if err := c.checkHook(ctx, spec.Webhook, "", at); err != nil { // hookcheck.go
		return nil, err
	}
	if spec.CompletionKind != "" && spec.CompletionQueue == "" {
		spec.CompletionQueue = DefaultCompletionQueue
	}
	return gb.CreateGroup(ctx, spec)
}

// Group returns a group's live progress, or ErrGroupNotFound.
func (c *Client) Group(ctx context.Context, id string) (*GroupProgress, error) {
	gb, err := c.groups()
	if err != nil {
		return nil, err
	}
	if err := validName(Field("", "group"), id, true); err != nil {
		return nil, err
	}
	return gb.Group(ctx, id)
}

// CancelGroup cancels every job of the group that has not started and asks
// the running ones to stop (their handlers' contexts end within a
// heartbeat). The group is done once they have all finished; its
// completion job, if any, still runs, with CancelRequested in its report.
func (c *Client) CancelGroup(ctx context.Context, id string) (*GroupProgress, error) {
	gb, err := c.groups()
	if err != nil {
		return nil, err
	}
	if err := validName(Field("", "group"), id, true); err != nil {
		return nil, err
	}
	return gb.CancelGroup(ctx, id)
}
