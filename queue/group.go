package queue

import (
	"context"
	"errors"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetype"
)

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
