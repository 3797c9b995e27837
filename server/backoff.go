package server

import (
	"net/http"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// backOffRequest is the body of POST /v1/tenants/{tenant}/backoff and
// POST /v1/groups/{group}/backoff (queue.Client.BackOff).
type backOffRequest struct {
	// DurationMS is how long the scope's jobs start no more; 0 resumes at
	// once. Required, so that an empty body cannot resume by mistake.
	DurationMS *int64 `json:"duration_ms"`
}

// backOffBody answers the back-off routes: the scope's pause after the
// call. A later end already in force is kept, so PausedUntil may be later
// than asked.
type backOffBody struct {
	Tenant      string     `json:"tenant,omitempty"`
	Group       string     `json:"group,omitempty"`
	Paused      bool       `json:"paused"`
	PausedUntil *time.Time `json:"paused_until,omitempty"`
}

// handleBackOffTenant is POST /v1/tenants/{tenant}/backoff: the tenant's
// jobs start no more for duration_ms, such as after an upstream answered
// 429 for it; running jobs go on and it resumes by itself.
func (s *Server) handleBackOffTenant(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("tenant")
	s.backOff(w, r, queue.TenantScope(name), "tenant", backOffBody{Tenant: name})
}

// handleBackOffGroup is POST /v1/groups/{group}/backoff, the same for a
// group of jobs (such as a crawl of one site).
func (s *Server) handleBackOffGroup(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("group")
	s.backOff(w, r, queue.GroupScope(name), "group", backOffBody{Group: name})
}

func (s *Server) backOff(w http.ResponseWriter, r *http.Request, scope queue.Scope, pathField string, out backOffBody) {
	var body backOffRequest
	if p := decodeJSON(r, &body, false); p != nil {
		writeProblem(w, p, nil)
		return
	}
	if body.DurationMS == nil {
		writeProblem(w, badRequest("duration_ms is required: how long the %s's jobs start no more, in milliseconds (0 resumes at once)", pathField), nil)
		return
	}
	// The plain 100-year bound: 0 resumes here (a queue pause's 0 means
	// "until resumed", pauseBound).
	if p := msBound.check("duration_ms", *body.DurationMS); p != nil {
		writeProblem(w, p, nil)
		return
	}
	d := time.Duration(*body.DurationMS) * time.Millisecond
	until, err := s.jobs.BackOff(r.Context(), scope, d)
	if err != nil {
		s.jobError(w, r, asField(err, queue.Field("Scope", "Name"), pathField)) // the path's {tenant} or {group}
		return
	}
	if !until.IsZero() {
		out.Paused, out.PausedUntil = true, timePtr(until)
	}
	writeJSON(w, http.StatusOK, out)
}
