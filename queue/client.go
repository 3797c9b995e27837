package queue

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetype"
	"go.opentelemetry.io/otel/trace"
)

// ClientConfig configures a Client. The zero value is the default.
type ClientConfig struct {
	// MaxPayload is the largest JobSpec.Payload accepted, in bytes;
	// default DefaultMaxPayload (1 MiB).
	MaxPayload int
	// Admission refuses enqueues while the system is overloaded or a
	// queue is at its depth cap; the zero value admits everything.
	Admission Admission
	// Priority, when its Func is set, computes the priority of each job
	// with a tenant from the tenant's recent load (see LoadPriority); the
	// zero value keeps the priorities the specs carry.
	Priority PriorityConfig
	// TracerProvider, when set, traces each enqueue as a span below the
	// caller's (ctx) and stores its context with the jobs (JobSpec.
	// Trace) for their workers to continue. Default nil: no spans and no
	// cost.
	TracerProvider trace.TracerProvider
	// CheckWebhook, when set, checks every webhook given with a job or a
	// group (Enqueue, EnqueueBatch, EnqueueFlow, SetSchedule,
	// SyncSchedules, CreateGroup, and each job a schedule enqueues) before
	// anything is stored: one check for every way a job comes in. Default
	// nil: a webhook's form is checked, its address is left to the
	// dispatcher's guard at delivery.
	CheckWebhook WebhookCheck
}

// Client enqueues and inspects jobs. It is safe for concurrent use.
type Client struct {
	b   backend.Backend
	cfg ClientConfig
	adm *admission
	tr  *tracer // nil when tracing is off
	// live, once Reconfigure has run, replaces cfg's Admission and
	// Priority and adm.
	live atomic.Pointer[clientLive]
	hub  hub // Wait and Subscribe (watch.go)
}

// NewClient returns a client on b, configured by an optional ClientConfig
// (only the first one given is used).
func NewClient(b backend.Backend, cfg ...ClientConfig) *Client {
	c := &Client{b: b}
	if len(cfg) > 0 {
		c.cfg = cfg[0]
	}
	if c.cfg.MaxPayload <= 0 {
		c.cfg.MaxPayload = DefaultMaxPayload
	}
	c.adm = newAdmission(c.cfg.Admission)
	c.tr = newTracer(c.cfg.TracerProvider)
	return c
}

// Backend returns the backend the client uses.
func (c *Client) Backend() backend.Backend { return c.b }

// Enqueue validates spec and stores it as a new job. When spec.UniqueKey is
// held by another job it stores nothing and returns that job together with
// ErrDuplicate. A bad spec returns an *InvalidArgumentError naming the field
// and stores nothing.
func (c *Client) Enqueue(ctx context.Context, spec JobSpec) (*Job, error) {
	res, err := c.EnqueueBatch(ctx, []JobSpec{spec})
	if err != nil {
		return nil, err
	}
	if res[0].Duplicate {
		return res[0].Job, ErrDuplicate
	}
	return res[0].Job, nil
}

// EnqueueBatch validates every spec and then stores them all in one atomic
// step: when any spec is invalid, nothing is stored and the error names the
// spec's index and field. Duplicates (see Enqueue) are reported per spec in
// the result, which has one entry per spec, in order. On a router whose
// specs' queues are on several backends (queue/mux), each backend stores
// its part atomically; when one fails after another stored its part, the
// error is a *PartialError saying which specs were stored.
func (c *Client) EnqueueBatch(ctx context.Context, specs []JobSpec) ([]Enqueued, error) {
	if c.tr != nil && len(specs) > 0 {
		return c.enqueueTraced(ctx, specs)
	}
	return c.enqueueBatch(ctx, specs)
}

func (c *Client) enqueueBatch(ctx context.Context, specs []JobSpec) ([]Enqueued, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	norm := make([]JobSpec, len(specs))
	for i, s := range specs {
		if err := ValidateSpec(s, c.cfg.MaxPayload); err != nil {
			if len(specs) > 1 {
				if ia, ok := err.(*InvalidArgumentError); ok {
					return nil, queuetype.InvalidArgument(ia.Path.At("specs", i), "%s", ia.Rule)
				}
			}
			return nil, err
		}
		norm[i] = specDefaults(s)
	}
	batch := ""
	if len(specs) > 1 {
		batch = "specs"
	}
	if err := c.checkSpecHooks(ctx, norm, batch); err != nil { // hookcheck.go
		return nil, err
	}
	// A spec that needs a feature the backend lacks is refused here, before
	// admission counts it, so no backend can silently ignore a field.
	if err := checkScheduling(ctx, c.b, norm); err != nil { // enforce.go
		return nil, err
	}
	if err := backend.CheckPlaced(c.b, norm); err != nil {
		return nil, err
	}
	adm, prio := c.current()
	rsv, err := adm.admit(ctx, c.b, norm)
	if err != nil {
		return nil, err
	}
	prio.apply(ctx, norm)
	res, err := c.b.Enqueue(ctx, norm)
	adm.settle(rsv, norm, res, err)
	if err != nil {
		return nil, adm.refusal(err)
	}
	if len(res) != len(specs) {
		return nil, fmt.Errorf("queue: backend returned %d results for %d specs", len(res), len(specs))
	}
	return res, nil
}

// Get returns the job with the given id, or ErrNotFound. A job with
// parents comes with them (Job.Parents) on a backend with CapFlows.
func (c *Client) Get(ctx context.Context, id string) (*Job, error) {
	j, err := c.b.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return j, withParents(ctx, c.b, j)
}

// Cancel cancels a job. A job that has not started is cancelled at once
// and never runs. A running job stays active with CancelRequested set: its
// handler's context is cancelled within one heartbeat (a third of the
// lease), and the job ends cancelled unless the handler completes anyway.
// Cancelling a cancelled job is a no-op; a completed or failed one returns
// the job and ErrJobFinished. It returns the job as it is after the call.
func (c *Client) Cancel(ctx context.Context, id string) (*Job, error) {
	return c.b.Cancel(ctx, id)
}

// List returns one page of jobs matching f, oldest first unless f.Order
// says NewestFirst. Pass the returned Page.Next as f.Cursor to read the
// next page; a page may be short, even empty, while Next is set (see
// Backend.List), so only an empty Next ends the listing. Bad filters are
// an *InvalidArgumentError naming the field (ListFilter.Validate).
func (c *Client) List(ctx context.Context, f ListFilter) (*Page, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if f.Limit == 0 {
		f.Limit = DefaultListLimit
	}
	if f.Limit > MaxListLimit {
		f.Limit = MaxListLimit
	}
	return c.b.List(ctx, f)
}

// Stats returns job counts per queue and state, sorted by queue.
func (c *Client) Stats(ctx context.Context) ([]QueueStats, error) {
	return c.b.Stats(ctx)
}
