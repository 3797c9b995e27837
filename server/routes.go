package server

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/server/config"
)

// route is one API endpoint. The table below is the only place routes are
// declared: the mux, the auth roles and the OpenAPI test all read it.
type route struct {
	method, path string
	// role is what a token needs; "" means public.
	role config.Role
	// job marks routes that need the job queue.
	job     bool
	handler http.HandlerFunc
}

func (s *Server) routeTable() []route {
	return append([]route{
		{method: "GET", path: "/healthz", handler: s.handleHealth},
		{method: "GET", path: "/readyz", handler: s.handleReady},
		{method: "GET", path: "/metrics", handler: s.handleMetrics(s.metrics.handler())}, // metrics.token checked there
		{method: "GET", path: "/v1/openapi.json", handler: handleOpenAPI},
		{method: "GET", path: "/v1/whoami", handler: s.handleWhoami},

		{method: "GET", path: "/v1/limits", role: config.RoleLimiter, handler: s.handleScenes},
		{method: "POST", path: "/v1/limits/{scene}/{policy}", role: config.RoleLimiter, handler: s.handleLimit(false)},
		{method: "POST", path: "/v1/limits/{scene}/{policy}/peek", role: config.RoleLimiter, handler: s.handleLimit(true)},
		{method: "POST", path: "/v1/limits/{scene}/{policy}/acquire", role: config.RoleLimiter, handler: s.handleAcquire},
		{method: "POST", path: "/v1/limits/{scene}/{policy}/release", role: config.RoleLimiter, handler: s.handleRelease},
		{method: "POST", path: "/v1/limits/{scene}/{policy}/inspect", role: config.RoleAdmin, handler: s.handleInspect},
		{method: "POST", path: "/v1/limits/{scene}/{policy}/reset", role: config.RoleAdmin, handler: s.handleReset},
		{method: "GET", path: "/v1/limit-overrides", role: config.RoleAdmin, handler: s.handleListOverrides},
		{method: "PUT", path: "/v1/limit-overrides/{scene}/{policy}", role: config.RoleAdmin, handler: s.handleSetOverride},
		{method: "DELETE", path: "/v1/limit-overrides/{scene}/{policy}", role: config.RoleAdmin, handler: s.handleDeleteOverride},

		{method: "GET", path: "/v1/budgets", role: config.RoleLimiter, handler: s.handleBudgets},
		{method: "GET", path: "/v1/budgets/{budget}", role: config.RoleLimiter, handler: s.handleBudget},
		{method: "POST", path: "/v1/budgets/{budget}/close", role: config.RoleWorker, handler: s.handleCloseBudget},

		{method: "POST", path: "/v1/jobs", role: config.RoleProducer, job: true, handler: s.handleEnqueue},
		{method: "POST", path: "/v1/jobs/batch", role: config.RoleProducer, job: true, handler: s.handleEnqueueBatch},
		{method: "GET", path: "/v1/jobs", role: config.RoleProducer, job: true, handler: s.handleListJobs},
		{method: "GET", path: "/v1/jobs/{id}", role: config.RoleProducer, job: true, handler: s.handleGetJob},
		{method: "POST", path: "/v1/jobs/{id}/cancel", role: config.RoleProducer, job: true, handler: s.handleCancelJob},
		{method: "GET", path: "/v1/queues/stats", role: config.RoleProducer, job: true, handler: s.handleStats},
		{method: "POST", path: "/v1/jobs/{id}/retry", role: config.RoleAdmin, job: true, handler: s.handleRetryJob},
		{method: "GET", path: "/v1/jobs/{id}/deliveries", role: config.RoleProducer, job: true, handler: s.handleJobDeliveries},
		{method: "POST", path: "/v1/queues/{queue}/pause", role: config.RoleAdmin, job: true, handler: s.handlePauseQueue},
		{method: "POST", path: "/v1/queues/{queue}/resume", role: config.RoleAdmin, job: true, handler: s.handleResumeQueue},
		{method: "GET", path: "/v1/webhooks/{subscription}/deliveries", role: config.RoleAdmin, job: true, handler: s.handleWebhookDeliveries},

		{method: "POST", path: "/v1/worker/lease", role: config.RoleWorker, job: true, handler: s.handleLease},
		{method: "POST", path: "/v1/worker/jobs/{id}/heartbeat", role: config.RoleWorker, job: true, handler: s.handleHeartbeat},
		{method: "POST", path: "/v1/worker/jobs/{id}/complete", role: config.RoleWorker, job: true, handler: s.handleComplete},
		{method: "POST", path: "/v1/worker/jobs/{id}/fail", role: config.RoleWorker, job: true, handler: s.handleFail},
		{method: "POST", path: "/v1/worker/jobs/{id}/requeue", role: config.RoleWorker, job: true, handler: s.handleRequeue},
		{method: "POST", path: "/v1/worker/jobs/{id}/progress", role: config.RoleWorker, job: true, handler: s.handleProgress},
		{method: "GET", path: "/v1/events", role: config.RoleProducer, job: true, handler: s.handleEvents},

		{method: "GET", path: "/v1/tenants", role: config.RoleProducer, job: true, handler: s.handleListTenants},
		{method: "GET", path: "/v1/tenants/{tenant}", role: config.RoleProducer, job: true, handler: s.handleGetTenant},
		{method: "PUT", path: "/v1/tenants/{tenant}", role: config.RoleAdmin, job: true, handler: s.handleSetTenant},
		{method: "PUT", path: "/v1/tenants/{tenant}/limit", role: config.RoleAdmin, job: true, handler: s.handleSetTenantLimit},
		{method: "GET", path: "/v1/tenants/{tenant}/webhook-secret", role: config.RoleAdmin, job: true, handler: s.handleGetTenantSecret},
		{method: "PUT", path: "/v1/tenants/{tenant}/webhook-secret", role: config.RoleAdmin, job: true, handler: s.handleSetTenantSecret},
		{method: "DELETE", path: "/v1/tenants/{tenant}/webhook-secret", role: config.RoleAdmin, job: true, handler: s.handleDeleteTenantSecret},
		{method: "POST", path: "/v1/tenants/{tenant}/backoff", role: config.RoleWorker, job: true, handler: s.handleBackOffTenant},
		{method: "POST", path: "/v1/groups", role: config.RoleProducer, job: true, handler: s.handleCreateGroup},
		{method: "GET", path: "/v1/groups/{group}", role: config.RoleProducer, job: true, handler: s.handleGetGroup},
		{method: "POST", path: "/v1/groups/{group}/cancel", role: config.RoleProducer, job: true, handler: s.handleCancelGroup},
		{method: "POST", path: "/v1/groups/{group}/backoff", role: config.RoleWorker, job: true, handler: s.handleBackOffGroup},
		{method: "POST", path: "/v1/flows", role: config.RoleProducer, job: true, handler: s.handleEnqueueFlow},
		{method: "GET", path: "/v1/flows/{flow}", role: config.RoleProducer, job: true, handler: s.handleGetFlow},
		{method: "POST", path: "/v1/flows/{flow}/cancel", role: config.RoleProducer, job: true, handler: s.handleCancelFlow},
	}, append(s.dashboardRoutes(), s.scheduleRoutes()...)...) // dashboard.go, schedules.go
}

// routes builds the mux. Unknown paths and wrong methods are answered as
// problems too, so a client never has to parse a plain-text error.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	paths := http.NewServeMux() // path-only patterns, to tell 405 from 404
	methods := map[string][]string{}
	for _, rt := range s.routeTable() {
		pattern := rt.path
		if pattern == "/" {
			pattern = "/{$}" // the dashboard's index; "/" alone would match every path
		}
		mux.Handle(rt.method+" "+pattern, s.wrap(rt))
		if _, seen := methods[rt.path]; !seen {
			paths.Handle(pattern, http.NotFoundHandler())
		}
		methods[rt.path] = append(methods[rt.path], rt.method)
	}
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := paths.Handler(r); pattern != "" {
			w.Header().Set("Allow", strings.Join(methods[pattern], ", "))
			writeProblem(w, &problem{Status: http.StatusMethodNotAllowed, Detail: fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, pattern, strings.Join(methods[pattern], ", "))}, nil)
			return
		}
		writeProblem(w, notFound("no route for %s %s: see /v1/openapi.json", clip(r.Method), clip(r.URL.Path)), nil)
	}))
	return mux
}

// wrap adds, in order: metrics by route, panic recovery, auth, the check
// of the URL's text (urltext.go), the queue check and the body size limit.
func (s *Server) wrap(rt route) http.Handler {
	name := rt.method + " " + rt.path
	params := pathParams(rt.path)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("server: handler panic", "route", name, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				writeProblem(w, &problem{Status: http.StatusInternalServerError, Detail: "internal error"}, nil)
			}
		}()
		st := s.state.Load()
		if p := st.auth.authorize(r, rt.role); p != nil {
			if p.Status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
			}
			writeProblem(w, p, nil)
			return
		}
		if p := checkURLText(r, params); p != nil {
			writeProblem(w, p, nil)
			return
		}
		if rt.job && s.jobs == nil {
			s.jobError(w, r, errNoQueue)
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, st.cfg.Server.MaxBodyBytes)
		}
		rt.handler(w, r)
	})
	return s.metrics.instrument(name, h)
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReady checks the stores within two seconds.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if s.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.ready(ctx); err != nil {
			s.logFault(r.Context(), slog.LevelWarn, "server: not ready", "error", err)
			w.Header().Set("Retry-After", "1")
			writeProblem(w, &problem{Status: http.StatusServiceUnavailable, Detail: "store unreachable"}, nil)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

//go:embed openapi.yaml
var openAPIYAML []byte

// openAPIJSON is the document as JSON, converted once: it is written in
// YAML because that is easier to read and review.
var openAPIJSON = sync.OnceValue(func() []byte {
	var doc any
	if err := yaml.Unmarshal(openAPIYAML, &doc); err != nil {
		panic("server: openapi.yaml: " + err.Error()) // a test parses it
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic("server: openapi.yaml: " + err.Error())
	}
	return out
})

// OpenAPI returns the OpenAPI 3 document of the HTTP API, as JSON.
func OpenAPI() []byte { return append([]byte(nil), openAPIJSON()...) }

func handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIJSON())
}
