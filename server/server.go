// Package server serves Sluice's rate limits and job queue over HTTP/JSON
// and Envoy's rate-limit gRPC API, driven by one config (package
// server/config).
//
// New builds the HTTP handler and the gRPC service on given stores; Run
// (run.go) opens the stores a config names, listens, follows config
// changes and shuts down gracefully. Every route, its method and the role
// it needs are listed once (routes), and the OpenAPI document served at
// /v1/openapi.json is checked against that list by a test.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/server/config"
	"github.com/sluicehq/sluice/server/dashboard"
)

// Options configures a Server.
type Options struct {
	// Config is the initial configuration; nil means config.Default().
	Config *config.Config
	// Limits is the rate-limit store. Required.
	Limits ratelimit.Store
	// Queue is the job backend; nil serves the job routes as 503
	// "no job queue".
	Queue backend.Backend
	// Ready reports whether the stores are reachable, for /readyz; nil
	// means always ready.
	Ready func(ctx context.Context) error
	// Logger receives request and fault logs; default slog.Default().
	Logger *slog.Logger
	// Registry receives the metrics; nil means a new registry (served at
	// /metrics with the Go and process collectors).
	Registry *prometheus.Registry
	// Now is the clock for job latency metrics; default time.Now.
	Now func() time.Time
	// TracerProvider, when set, traces enqueues, limit decisions and
	// webhook deliveries (see docs/tracing.md); default nil: off.
	TracerProvider trace.TracerProvider
	// Clock is where rate-limit waits (wait_ms) sleep and cached override
	// answers age; nil means the system clock. Give Limits the same clock.
	Clock clock.Clock
}

// Server is the HTTP handler and gRPC service. It is safe for concurrent
// use; Apply swaps the configuration atomically while requests run.
type Server struct {
	state   atomic.Pointer[state]
	limits  ratelimit.Store
	jobs    *queue.Client
	backend backend.Backend
	ready   func(ctx context.Context) error
	log     *slog.Logger
	metrics *metrics
	now     func() time.Time
	handler http.Handler
	leases  *leaseWaiter
	counts  *dashboard.Breakdowns // job counts by tenant, group, ... (dashboard.go)
	qo      *queueOptions         // start rates, priority, overload, per-queue maintenance (queue_options.go)
	tracer  trace.TracerProvider  // nil when tracing is off (tracing.go)
	clock   clock.Clock           // rate-limit waits and override ages (Options.Clock)
	// overrides is RunOptions.Overrides, applied to each reloaded config.
	overrides func(*config.Config)
	faults    logLimiter      // store-fault lines, at most one per kind per faultLogEvery (faultlog.go)
	budgets   *budget.Budgets // nil when the limit store keeps no budgets (budgets.go)
	jb        *jobBudgets     // tickets and holds of jobs on budgets; nil without budgets or a queue (budgetjobs.go)
}

// New returns a Server for opts. It fails when opts.Limits is nil or the
// config cannot be served (see Apply).
func New(opts Options) (*Server, error) {
	if opts.Limits == nil {
		return nil, errors.New("server: Options.Limits is required")
	}
	s := &Server{limits: ratelimit.TraceStore(opts.Limits, opts.TracerProvider), backend: opts.Queue, ready: opts.Ready,
		log: opts.Logger, now: opts.Now, tracer: opts.TracerProvider, clock: clock.Or(opts.Clock)}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	cfg := opts.Config
	if cfg == nil {
		cfg = config.Default()
	}
	s.budgets = newBudgets(s.limits, s.clock)
	s.metrics = newMetrics(opts.Registry)
	s.metrics.activity = dashboard.NewActivity(dashboard.ActivityOptions{Now: s.now})
	if s.budgets != nil {
		s.metrics.watchBudgets(s.budgets) // budgets.go
	}
	if opts.Queue != nil && s.budgets != nil {
		s.jb = newJobBudgets(s.clock)
		s.watchJobHolds() // budgetjobs.go
	}
	if opts.Queue != nil {
		s.jobs = queue.NewClient(opts.Queue, queue.ClientConfig{
			MaxPayload: int(cfg.Queues.MaxPayloadBytes),
			// Enqueues over a queue's depth cap are refused with an
			// overload error, answered as 503 + Retry-After.
			Admission:      queue.Admission{MaxDepth: cfg.Queues.MaxDepth},
			TracerProvider: opts.TracerProvider,
			CheckWebhook:   s.checkHook, // jobhooks.go: every job's and group's webhook
		})
		s.counts = dashboard.NewBreakdowns(s.jobs, 0, s.now)
		s.metrics.watchQueue(s.jobs)
		s.leases = newLeaseWaiter(opts.Queue)
	}
	if err := s.Apply(cfg); err != nil {
		return nil, err
	}
	s.handler = s.routes()
	return s, nil
}

// Handler returns the HTTP handler: the /v1 API, /healthz, /readyz,
// /metrics.
func (s *Server) Handler() http.Handler { return s.handler }

// Config returns the configuration in use.
func (s *Server) Config() *config.Config { return s.state.Load().cfg }

// Apply builds everything that depends on cfg (scenes, tokens, Envoy
// rules) and swaps it in atomically: requests in flight finish on the old
// version, new ones see the new one. Counters live in the store, so a
// policy whose window and algorithm stay keeps its counts. It fails, and
// changes nothing, when cfg cannot be served.
func (s *Server) Apply(cfg *config.Config) error {
	st, err := s.build(cfg)
	if err != nil {
		return err
	}
	if err := s.applyBudgets(cfg); err != nil { // budgets.go: all or nothing
		return err
	}
	s.state.Store(st)
	s.metrics.tenants.setLimit(cfg.Metrics.TenantSeries)
	s.applyQueueOptions(cfg)
	return nil
}

// state is everything derived from one config version.
type state struct {
	cfg    *config.Config
	scenes map[string]*scene
	auth   authState
	envoy  []envoyRule
	// overrides finds per-subject overrides (limits_overrides.go).
	overrides *ratelimit.Overrides
}

func (s *Server) build(cfg *config.Config) (*state, error) {
	auth, err := buildAuth(cfg)
	if err != nil {
		return nil, err
	}
	st := &state{cfg: cfg, auth: auth, scenes: map[string]*scene{}}
	if st.overrides, err = s.buildOverrides(cfg); err != nil {
		return nil, err
	}
	for name, sc := range cfg.Limits.Scenes {
		built, err := s.buildScene(cfg, name, sc, st.overrides)
		if err != nil {
			return nil, fmt.Errorf("server: scene %q: %w", name, err)
		}
		st.scenes[name] = built
	}
	st.envoy = buildEnvoy(cfg)
	return st, nil
}
