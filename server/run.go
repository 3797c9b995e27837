package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/sluicehq/sluice/server/config"
)

// RunOptions configures Run.
type RunOptions struct {
	// Config is the configuration to serve; nil means config.Default().
	Config *config.Config
	// ConfigPath, when set, is watched: each valid new version is applied
	// at once, an invalid one is logged and ignored. Changes to server.*
	// and storage.* are logged and take effect at the next start.
	ConfigPath string
	// Logger receives everything, go-redis's own lines included (Run sets
	// go-redis's process-wide logger to it); default slog.Default().
	Logger *slog.Logger
	// Listening, when set, is called with the HTTP (and gRPC, or "")
	// addresses once both accept connections.
	Listening func(httpAddr, grpcAddr string)
	// Overrides, when set, is applied to each new version of the watched
	// file before it is checked and applied, so that settings taken from
	// flags and the environment (sluice serve's) outlive a reload.
	Overrides func(*config.Config)
	// TracerProvider, when set, is used instead of the one telemetry
	// configures (for tests and programs that set up OpenTelemetry
	// themselves); Run does not shut it down.
	TracerProvider trace.TracerProvider
}

// Run opens the stores the config names (starting even while Redis does
// not answer: see OpenStores), serves HTTP (and the Envoy
// rate-limit gRPC service when server.grpc is set) until ctx ends, then
// shuts down gracefully: it stops accepting, ends lease long-polls, waits
// up to server.shutdown_timeout for requests in flight, and closes the
// stores. Jobs leased by workers stay active under their leases: a worker
// that finishes after a restart completes them with its token, and a
// lease that runs out is rescued, so no job is lost.
func Run(ctx context.Context, opts RunOptions) error {
	cfg := opts.Config
	if cfg == nil {
		cfg = config.Default()
	}
	if err := checkWebhooks(cfg); err != nil {
		return err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	redis.SetLogger(newRedisLogger(log))
	stores, err := OpenStores(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := stores.Close(); err != nil {
			log.Error("server: closing stores", "error", err)
		}
	}()
	tp, stopTracing, err := runTracing(ctx, cfg, opts)
	if err != nil {
		return err
	}
	defer stopTracing()
	srv, err := New(Options{Config: cfg, Limits: stores.Limits, Queue: stores.Queue, Ready: stores.Ping, Logger: log, TracerProvider: tp})
	if err != nil {
		return err
	}
	srv.overrides = opts.Overrides
	if err := srv.applyTenantSecrets(ctx, cfg); err != nil {
		return err
	}
	tenantsPending, err := srv.applyTenantsAtStart(ctx, cfg.Queues.Tenants)
	if err != nil {
		return fmt.Errorf("server: queues.tenants: %w", err)
	}
	if len(cfg.Auth.Tokens) == 0 {
		log.Warn("server: no auth tokens configured: serving without authentication", "listen", cfg.Server.Listen, "allow_anonymous", cfg.Auth.AllowAnonymous)
	}
	return srv.serve(ctx, cfg, stores, opts, tenantsPending)
}

// serve listens and serves until ctx ends; tenantsPending starts the
// retry of queues.tenants (see applyTenantsAtStart).
func (s *Server) serve(ctx context.Context, cfg *config.Config, stores *Stores, opts RunOptions, tenantsPending bool) error {
	httpLn, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("server: listen: %w", err)
	}
	var grpcLn net.Listener
	if cfg.Server.GRPC != "" {
		if grpcLn, err = net.Listen("tcp", cfg.Server.GRPC); err != nil {
			httpLn.Close()
			return fmt.Errorf("server: grpc listen: %w", err)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	// Timeouts bound slow clients; the write timeout leaves room for the
	// longest lease long-poll.
	hs := &http.Server{
		Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: MaxLeaseWait + 30*time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	wg.Add(1)
	go func() { defer wg.Done(); errc <- serveErr(hs.Serve(httpLn)) }()
	var gs *grpc.Server
	var hc *health.Server
	grpcAddr := ""
	if grpcLn != nil {
		gs = grpc.NewServer()
		s.RegisterGRPC(gs)
		// The standard health service, for Envoy's and Kubernetes' gRPC
		// health checks: SERVING while up, NOT_SERVING once shutting down.
		hc = health.NewServer()
		healthpb.RegisterHealthServer(gs, hc)
		grpcAddr = grpcLn.Addr().String()
		wg.Add(1)
		go func() { defer wg.Done(); errc <- serveErr(gs.Serve(grpcLn)) }()
	}
	s.background(runCtx, &wg, opts.ConfigPath)
	if tenantsPending {
		wg.Add(1)
		go func() { defer wg.Done(); s.retryTenants(runCtx, cfg.Queues.Tenants) }()
	}
	s.log.Info("sluice: listening", append([]any{"url", "http://" + httpLn.Addr().String(), "grpc", grpcAddr, "store", stores.Kind}, stores.where()...)...)
	if opts.Listening != nil {
		opts.Listening(httpLn.Addr().String(), grpcAddr)
	}
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	s.log.Info("sluice: shutting down")
	if hc != nil {
		hc.Shutdown()
	}
	s.shutdown(hs, gs, cfg.Server.ShutdownTimeout.D())
	stop()
	wg.Wait()
	s.log.Info("sluice: stopped")
	return runErr
}

func serveErr(err error) error {
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// shutdown ends long-polls first (they would hold Shutdown for up to a
// minute), then lets requests in flight finish within timeout.
func (s *Server) shutdown(hs *http.Server, gs *grpc.Server, timeout time.Duration) {
	if s.leases != nil {
		s.leases.close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		s.log.Warn("server: shutdown timed out; closing connections", "error", err)
		hs.Close()
	}
	if gs != nil {
		done := make(chan struct{})
		go func() { gs.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			gs.Stop()
			<-done
		}
	}
}

// background starts the config watcher and the queue's maintenance: the
// rescue of expired leases (workers over HTTP cannot do it) and the
// cleaner.
func (s *Server) background(ctx context.Context, wg *sync.WaitGroup, path string) {
	if path != "" {
		w, err := config.NewWatcher(path, config.WatchOptions{Logger: s.log, OnChange: s.onConfigChange})
		if err != nil {
			s.log.Error("server: cannot watch the config file; changes need a restart", "file", path, "error", err)
		} else {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.Run(ctx); err != nil {
					s.log.Error("server: config watcher stopped", "error", err)
				}
			}()
		}
	}
	if s.backend == nil {
		return
	}
	s.startWebhooks(ctx, wg)
	s.maintain(ctx, wg) // rescue, cleaner, aging, overload monitor (queue_maintain.go)
	s.startSchedules(ctx, wg)
	// The event log is pruned to its retention (events.go).
	s.startEventPruner(ctx, wg)
}

// onConfigChange applies a new config version. Listeners and stores are
// bound at start: changes to them are kept as running and logged.
func (s *Server) onConfigChange(next *config.Config) error {
	cur := s.Config()
	if s.overrides != nil {
		s.overrides(next)
		if err := next.Validate(); err != nil {
			return err
		}
	}
	next = keepPlacement(cur, next, s.log)
	if next.Server != cur.Server || next.Storage != cur.Storage {
		s.log.Warn("server: server.* and storage.* changes take effect at the next start")
	}
	applied := *next
	applied.Server, applied.Storage = cur.Server, cur.Storage
	if err := s.Apply(&applied); err != nil {
		return err
	}
	s.reloadSchedules(&applied) // schedules_run.go
	return nil
}
