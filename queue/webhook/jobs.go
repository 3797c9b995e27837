package webhook

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Names under which the webhooks given with a job and with its group
// appear in the delivery log and in an event's progress. A configured
// subscription cannot take them: its names have no '@'.
const (
	JobHookName   = "@job"
	GroupHookName = "@group"
)

// DefaultMaxResult is JobHooks.MaxResult's default.
const DefaultMaxResult = 64 << 10

// JobHooks makes a Dispatcher deliver, besides its subscriptions, the
// webhooks given with jobs (queue.JobSpec.Webhook) and with groups
// (queue.GroupSpec.Webhook): for each event of a job, the job's own
// webhook and its group's, when they want the event; for a group's
// group.completed, the group's. Each goes with its own body (a
// HookPayload: the event, the job's result, the caller's metadata),
// through the same outbox claims, retries, guard and delivery log as the
// subscriptions.
type JobHooks struct {
	// Backend is where the jobs and groups of the events are read (Get,
	// and Features().Groups and TenantSecrets). Required.
	Backend backend.Backend
	// Secret signs the deliveries of tenants without a secret of their
	// own (Features().TenantSecrets); empty sends them unsigned.
	Secret string
	// MaxResult is the largest result put in a payload, in bytes; a
	// larger one is left out (ResultURL says where to fetch it). Default
	// DefaultMaxResult (64 KiB); negative never puts one in.
	MaxResult int
	// ResultURL, when set, returns where the result of a job can be
	// fetched, for results left out of a payload.
	ResultURL func(jobID string) string
	// CacheFor is how long a group's webhook and a tenant's secret are
	// remembered between events; default 30s. A secret changed through
	// the store takes effect within it.
	CacheFor time.Duration
}

// HookPayload is the body of a delivery to a webhook given with a job or
// group: the event, and what the job produced and the caller gave.
type HookPayload struct {
	queue.Event
	// Result is the job's result when it is JSON; ResultBase64 when it is
	// not; neither when there is none or it is over JobHooks.MaxResult.
	Result       json.RawMessage `json:"result,omitempty"`
	ResultBase64 string          `json:"result_base64,omitempty"`
	// ResultSize is the result's length in bytes; ResultURL, set when the
	// result was left out for its size, is where to fetch it.
	ResultSize int    `json:"result_size,omitempty"`
	ResultURL  string `json:"result_url,omitempty"`
	// Flow is the id of the flow the job belongs to (queue.Client's
	// EnqueueFlow) and FlowNode its name there; both empty for a job of
	// no flow and for a group's own event. The group's id is Event.Group.
	Flow     string `json:"flow,omitempty"`
	FlowNode string `json:"flow_node,omitempty"`
	// Metadata is the webhook's Metadata, as given.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Webhook says whose webhook this is: "job" or "group".
	Webhook string `json:"webhook"`
}

// target is one receiver of one event with its own body.
type target struct {
	sub  Subscription
	body []byte
	// trace is the job's JobSpec.Trace, which the delivery's span
	// continues; empty for a subscription, whose job is not read.
	trace string
	// tenant is whose secret signs a per-job or per-group delivery.
	tenant string
}

// errLookup marks an event whose job or group could not be read: it is
// released to be tried again.
var errLookup = errors.New("webhook: reading the job or group of an event failed")

// hookTargets returns the per-job and per-group webhooks c goes to, with
// their bodies, skipping those already finished with it.
func (d *Dispatcher) hookTargets(ctx context.Context, c backend.ClaimedEvent) ([]target, error) {
	h := d.cfg.Jobs
	if h == nil {
		return nil, nil
	}
	e := c.Event
	var job *queue.Job
	if e.JobID != "" {
		j, err := h.Backend.Get(ctx, e.JobID)
		switch {
		case errors.Is(err, queue.ErrNotFound):
			// Cleaned up before delivery: what it asked for is gone.
		case err != nil:
			return nil, errors.Join(errLookup, err)
		default:
			job = j
		}
	}
	var out []target
	if job != nil && job.Webhook != nil && !c.Progress[JobHookName].Final && job.Webhook.Wants(e.Type) {
		t, err := d.hookTarget(ctx, JobHookName, "job", e, job, job.Webhook, job.Tenant)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if e.Group == "" || c.Progress[GroupHookName].Final {
		return out, nil
	}
	gw, tenant, err := d.groupHook(ctx, e.Group)
	if err != nil {
		return nil, err
	}
	if gw != nil && gw.Wants(e.Type) {
		if e.Tenant != "" {
			tenant = e.Tenant
		}
		t, err := d.hookTarget(ctx, GroupHookName, "group", e, job, gw, tenant)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// hookTarget builds the delivery of e to webhook w.
func (d *Dispatcher) hookTarget(ctx context.Context, name, whose string, e queue.Event, job *queue.Job, w *queue.Webhook, tenant string) (target, error) {
	secret, err := d.secretFor(ctx, tenant)
	if err != nil {
		return target{}, err
	}
	p := HookPayload{Event: e, Metadata: w.Metadata, Webhook: whose}
	if job != nil {
		p.Flow, p.FlowNode = job.Flow, job.FlowNode
		if len(job.Result) > 0 {
			d.attachResult(&p, job)
		}
	}
	body, err := json.Marshal(p)
	if err != nil {
		return target{}, err
	}
	t := target{sub: Subscription{Name: name, URL: w.URL, Secret: secret, Headers: w.Headers}, body: body, tenant: tenant}
	if job != nil {
		t.trace = job.Trace
	}
	return t, nil
}

// attachResult puts job's result in p, or its size and link when it is
// over the limit.
func (d *Dispatcher) attachResult(p *HookPayload, job *queue.Job) {
	h := d.cfg.Jobs
	limit := h.MaxResult
	if limit == 0 {
		limit = DefaultMaxResult
	}
	r := job.Result
	p.ResultSize = len(r)
	switch {
	case limit < 0 || len(r) > limit:
		if h.ResultURL != nil {
			p.ResultURL = h.ResultURL(job.ID)
		}
	case utf8.Valid(r) && json.Valid(r):
		p.Result = r
	default:
		p.ResultBase64 = base64.StdEncoding.EncodeToString(r)
	}
}

// groupHook returns the webhook of group id and its tenant (nil when it
// has none, or is gone), remembered for CacheFor.
func (d *Dispatcher) groupHook(ctx context.Context, id string) (*queue.Webhook, string, error) {
	if v, ok := d.hookCache.get("g\x00"+id, d.cfg.Clock.Now()); ok {
		g := v.(groupHook)
		return g.w, g.tenant, nil
	}
	gb := d.cfg.Jobs.Backend.Features().Groups
	if gb == nil {
		return nil, "", nil
	}
	var gh groupHook
	p, err := gb.Group(ctx, id)
	switch {
	case errors.Is(err, queue.ErrGroupNotFound):
	case err != nil:
		return nil, "", errors.Join(errLookup, err)
	default:
		gh = groupHook{p.Webhook, p.Tenant}
	}
	d.hookCache.put("g\x00"+id, gh, d.cfg.Clock.Now())
	return gh.w, gh.tenant, nil
}

type groupHook struct {
	w      *queue.Webhook
	tenant string
}

// secretFor returns the secret deliveries for tenant are signed with:
// its own, else JobHooks.Secret.
func (d *Dispatcher) secretFor(ctx context.Context, tenant string) (string, error) {
	h := d.cfg.Jobs
	ts := h.Backend.Features().TenantSecrets
	if tenant == "" || ts == nil {
		return h.Secret, nil
	}
	now := d.cfg.Clock.Now()
	if v, ok := d.hookCache.get("t\x00"+tenant, now); ok {
		return orDefault(v.(string), h.Secret), nil
	}
	s, err := ts.TenantSecret(ctx, tenant)
	if err != nil {
		return "", errors.Join(errLookup, err)
	}
	d.hookCache.put("t\x00"+tenant, s, now)
	return orDefault(s, h.Secret), nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
