package server

import (
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/config"
	"github.com/sluicehq/sluice/server/dashboard"
)

// dashboardRoutes are the dashboard's files and the read models its live
// views poll. The files are public: they hold no data, and every number
// the dashboard shows comes from the /v1 routes, with the operator's
// token.
func (s *Server) dashboardRoutes() []route {
	ui := dashboard.Handler().ServeHTTP
	return []route{
		{method: "GET", path: "/", handler: ui},
		{method: "GET", path: "/ui/{file}", handler: ui},
		{method: "GET", path: "/v1/activity/limits", role: config.RoleLimiter, handler: s.handleLimitActivity},
		{method: "GET", path: "/v1/activity/queues", role: config.RoleProducer, handler: s.handleQueueActivity},
		{method: "GET", path: "/v1/queues/counts", role: config.RoleProducer, job: true, handler: s.handleCounts},
	}
}

func (s *Server) handleLimitActivity(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.metrics.activity.Limits())
}

func (s *Server) handleQueueActivity(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.metrics.activity.Queues())
}

// handleCounts is GET /v1/queues/counts?by=tenant|group|kind|queue
// [&queue=Q][&state=S,...]: job counts by state, grouped by a job field.
func (s *Server) handleCounts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := dashboard.BreakdownRequest{By: q.Get("by"), Queue: q.Get("queue")}
	switch req.By {
	case dashboard.ByTenant, dashboard.ByGroup, dashboard.ByKind, dashboard.ByQueue:
	default:
		writeProblem(w, badRequest("by must be one of tenant, group, kind, queue; got %q", req.By), nil)
		return
	}
	for _, v := range q["state"] {
		for _, st := range strings.Split(v, ",") {
			if !queue.State(st).Valid() {
				writeProblem(w, badRequest("unknown state %q (states: %s)", st, stateNames()), nil)
				return
			}
			req.States = append(req.States, queue.State(st))
		}
	}
	out, err := s.counts.Count(r.Context(), req)
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
