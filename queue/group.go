package queue

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetype"
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

// groups returns b's groups, or an *UnsupportedError.
func (c *Client) groups() (backend.GroupBackend, error) {
	f := c.b.Features()
	if f.Groups == nil {
		return nil, backend.Unsupported(f.Name, CapGroups)
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
	if err := queuetype.ValidName(Field("", "group"), id, true); err != nil {
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
	if err := queuetype.ValidName(Field("", "group"), id, true); err != nil {
		return nil, err
	}
	return gb.CancelGroup(ctx, id)
}
