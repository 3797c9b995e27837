package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/config"
)

// tenantSettings is a tenant's scheduling settings in JSON; in a tenant's
// own settings 0 means "the default's value".
type tenantSettings struct {
	// Limit is how many of the tenant's jobs may run at once; -1 lifts it.
	Limit int `json:"limit"`
	// Weight is the tenant's share when tenants take turns.
	Weight int `json:"weight"`
	// Backlog caps the tenant's pending plus waiting jobs; -1 lifts it.
	Backlog int `json:"backlog"`
	// MaxWaitMS bounds a job's wait for a slot; 0 means no bound.
	MaxWaitMS int64 `json:"max_wait_ms"`
}

func toSettings(c queue.TenantConfig) tenantSettings {
	return tenantSettings{Limit: c.Limit, Weight: c.Weight, Backlog: c.Backlog, MaxWaitMS: c.MaxWait.Milliseconds()}
}

func (t tenantSettings) config() (queue.TenantConfig, *problem) {
	wait, p := millis("max_wait_ms", t.MaxWaitMS)
	return queue.TenantConfig{Limit: t.Limit, Weight: t.Weight, Backlog: t.Backlog, MaxWait: wait}, p
}

type tenantBody struct {
	Tenant      string           `json:"tenant"`
	Own         tenantSettings   `json:"own"`
	Effective   tenantSettings   `json:"effective"`
	Jobs        map[string]int64 `json:"jobs"`
	PausedUntil *time.Time       `json:"paused_until,omitempty"`
	// Warnings say where the settings just set do not hold (enforce.go).
	Warnings []string `json:"warnings,omitempty"`
}

func toTenantBody(i *queue.TenantInfo) tenantBody {
	return tenantBody{
		Tenant: i.Tenant, Own: toSettings(i.Own), Effective: toSettings(i.Effective), PausedUntil: timePtr(i.PausedUntil),
		Jobs: map[string]int64{"scheduled": i.Scheduled, "pending": i.Pending, "waiting": i.Waiting, "active": i.Active, "retrying": i.Retrying},
	}
}

func (s *Server) handleGetTenant(w http.ResponseWriter, r *http.Request) {
	s.writeTenant(w, r, nil)
}

// writeTenant answers with the tenant of the path and warnings.
func (s *Server) writeTenant(w http.ResponseWriter, r *http.Request, warnings []string) {
	info, err := s.jobs.Tenant(r.Context(), r.PathValue("tenant"))
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	body := toTenantBody(info)
	body.Warnings = warnings
	writeJSON(w, http.StatusOK, body)
}

// tenantListBody is GET /v1/tenants: a page of tenants in the shape of
// GET /v1/tenants/{tenant}.
type tenantListBody struct {
	Tenants []tenantBody `json:"tenants"`
	Next    string       `json:"next,omitempty"`
}

// handleListTenants lists every tenant with unfinished jobs or settings,
// by name or busiest first (order=busiest); 501 on a backend that cannot.
func (s *Server) handleListTenants(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := queue.TenantFilter{Order: queue.TenantOrder(q.Get("order")), Cursor: q.Get("cursor")}
	if p := pageLimit(q, &f.Limit); p != nil {
		writeProblem(w, p, nil)
		return
	}
	page, err := s.jobs.Tenants(r.Context(), f)
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	out := tenantListBody{Tenants: make([]tenantBody, len(page.Tenants)), Next: page.Next}
	for i, info := range page.Tenants {
		out.Tenants[i] = toTenantBody(info)
	}
	writeJSON(w, http.StatusOK, out)
}

// tenantLimitBody is the body of PUT /v1/tenants/{tenant}/limit: the
// concurrency limit alone (0 follows the default, -1 lifts it).
type tenantLimitBody struct {
	Concurrency *int `json:"concurrency"`
}

func (s *Server) handleSetTenantLimit(w http.ResponseWriter, r *http.Request) {
	var body tenantLimitBody
	if p := decodeJSON(r, &body, false); p != nil {
		writeProblem(w, p, nil)
		return
	}
	if body.Concurrency == nil {
		writeProblem(w, badRequest("concurrency is required: the number of the tenant's jobs that may run at once (0 follows the default, -1 lifts the limit)"), nil)
		return
	}
	tenant := r.PathValue("tenant")
	if err := s.jobs.SetTenantLimit(r.Context(), tenant, *body.Concurrency); err != nil {
		s.jobError(w, r, asField(err, queue.Field("TenantConfig", "Limit"), "concurrency"))
		return
	}
	s.writeTenant(w, r, s.gapWarnings(queue.CapTenants))
}

// handleSetTenant replaces a tenant's own settings.
func (s *Server) handleSetTenant(w http.ResponseWriter, r *http.Request) {
	var body tenantSettings
	if p := decodeJSON(r, &body, false); p != nil {
		writeProblem(w, p, nil)
		return
	}
	cfg, p := body.config()
	if p != nil {
		writeProblem(w, p, nil)
		return
	}
	if err := s.jobs.SetTenant(r.Context(), r.PathValue("tenant"), cfg); err != nil {
		s.jobError(w, r, err)
		return
	}
	s.writeTenant(w, r, s.gapWarnings(queue.CapTenants))
}

// applyTenants writes the config's tenant defaults and overrides to the
// backend at start. A backend without tenant scheduling is told nothing;
// configured tenants are then reported as unused.
func (s *Server) applyTenants(ctx context.Context, t config.Tenants) error {
	set := t.Default != (config.TenantLimit{}) || len(t.Overrides) > 0
	if !set || s.jobs == nil {
		return nil
	}
	if f := s.backend.Features(); f.Tenants == nil {
		s.log.Warn("server: queues.tenants is set but the job backend has no tenant scheduling; it is ignored", "backend", f.Name)
		return nil
	}
	if err := s.jobs.SetTenantDefaults(ctx, tenantConfig(t.Default)); err != nil {
		return err
	}
	for id, l := range t.Overrides {
		if err := s.jobs.SetTenant(ctx, id, tenantConfig(l)); err != nil {
			return err
		}
	}
	for _, w := range s.gapWarnings(queue.CapTenants) { // enforce.go
		s.log.Warn("server: queues.tenants "+w, "refused", "jobs of a limited or paused tenant on these queues")
	}
	return nil
}

func tenantConfig(l config.TenantLimit) queue.TenantConfig {
	return queue.TenantConfig{Limit: l.Concurrency, Weight: l.Weight, Backlog: int(l.BacklogCap), MaxWait: l.MaxWait.D()}
}

// groupSpecBody is the body of POST /v1/groups.
type groupSpecBody struct {
	ID                string          `json:"id"`
	Tenant            string          `json:"tenant,omitempty"`
	MaxConcurrency    int             `json:"max_concurrency,omitempty"`
	MinIntervalMS     int64           `json:"min_interval_ms,omitempty"`
	TTLMS             int64           `json:"ttl_ms,omitempty"`
	CompletionKind    string          `json:"completion_kind,omitempty"`
	CompletionQueue   string          `json:"completion_queue,omitempty"`
	CompletionPayload json.RawMessage `json:"completion_payload,omitempty"`
	// Webhook receives the events of the group's jobs and its
	// group.completed (see docs/webhooks.md).
	Webhook *queue.Webhook `json:"webhook,omitempty"`
}

type groupBody struct {
	groupSpecBody
	Jobs            map[string]int64 `json:"jobs"`
	Total           int64            `json:"total"`
	CancelRequested bool             `json:"cancel_requested"`
	Done            bool             `json:"done"`
	CompletionJobID string           `json:"completion_job_id,omitempty"`
	PausedUntil     *time.Time       `json:"paused_until,omitempty"`
	CreatedAt       time.Time        `json:"created_at"`
	FinishedAt      *time.Time       `json:"finished_at,omitempty"`
	// Warnings say where the group's settings do not hold (enforce.go).
	Warnings []string `json:"warnings,omitempty"`
}

func toGroupBody(g *queue.GroupProgress) groupBody {
	payload, _ := rawOrBase64(g.CompletionPayload)
	return groupBody{
		groupSpecBody: groupSpecBody{
			ID: g.ID, Tenant: g.Tenant, MaxConcurrency: g.MaxConcurrency, MinIntervalMS: g.MinInterval.Milliseconds(),
			TTLMS: g.TTL.Milliseconds(), CompletionKind: g.CompletionKind, CompletionQueue: g.CompletionQueue, CompletionPayload: payload,
			Webhook: redactHook(g.Webhook),
		},
		Jobs: map[string]int64{
			"scheduled": g.Scheduled, "pending": g.Pending, "waiting": g.Waiting, "active": g.Active, "retrying": g.Retrying, "blocked": g.Blocked,
			"completed": g.Completed, "failed": g.Failed, "cancelled": g.Cancelled,
		},
		Total: g.Total(), CancelRequested: g.CancelRequested, Done: g.Done, CompletionJobID: g.CompletionJobID,
		PausedUntil: timePtr(g.PausedUntil), CreatedAt: g.CreatedAt, FinishedAt: timePtr(g.FinishedAt),
	}
}

// spec turns the body into a GroupSpec, its milliseconds checked.
func (b groupSpecBody) spec() (queue.GroupSpec, *problem) {
	g := queue.GroupSpec{
		ID: b.ID, Tenant: b.Tenant, MaxConcurrency: b.MaxConcurrency,
		CompletionKind: b.CompletionKind, CompletionQueue: b.CompletionQueue, CompletionPayload: b.CompletionPayload,
		Webhook: b.Webhook,
	}
	var p *problem
	if g.MinInterval, p = millis("min_interval_ms", b.MinIntervalMS); p != nil {
		return g, p
	}
	g.TTL, p = millis("ttl_ms", b.TTLMS)
	return g, p
}

func (s *Server) handleCreateGroup(w http.ResponseWriter, r *http.Request) {
	var b groupSpecBody
	if p := decodeJSON(r, &b, false); p != nil {
		writeProblem(w, p, nil)
		return
	}
	spec, p := b.spec()
	if p != nil {
		writeProblem(w, p, nil)
		return
	}
	s.groupDefaults(&spec)
	g, err := s.jobs.CreateGroup(r.Context(), spec)
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	body := toGroupBody(g)
	body.Warnings = s.gapWarnings(queue.CapGroups)
	writeJSON(w, http.StatusCreated, body)
}

func (s *Server) handleGetGroup(w http.ResponseWriter, r *http.Request) {
	if d, p := waitParam(r); p != nil {
		writeProblem(w, p, nil)
		return
	} else if d > 0 {
		s.getGroupWaiting(w, r, d) // wait.go
		return
	}
	g, err := s.jobs.Group(r.Context(), r.PathValue("group"))
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toGroupBody(g))
}

func (s *Server) handleCancelGroup(w http.ResponseWriter, r *http.Request) {
	g, err := s.jobs.CancelGroup(r.Context(), r.PathValue("group"))
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toGroupBody(g))
}
