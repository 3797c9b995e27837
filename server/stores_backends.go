package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/amqpqueue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/server/config"
)

// openedBackend is one job backend a config places queues on.
type openedBackend struct {
	name string // config.BackendEmbedded, ...
	b    backend.Backend
	ping func(ctx context.Context) error
}

// openQueues opens every job backend cfg places queues on and sets
// st.Queue: the one backend when all queues are on it (so its job ids stay
// as they are), else a router (queue/mux) with the default backend first
// and a route, named after its backend, for each other one. client is the
// storage's Redis, or nil. Every backend opened is closed by st.Close,
// before the limits and the Redis client; every one is checked by
// st.Ping.
func (st *Stores) openQueues(ctx context.Context, cfg *config.Config, log *slog.Logger, client redis.UniversalClient) error {
	def := cfg.DefaultBackendOf()
	names := []string{def}
	for _, n := range config.QueueBackends {
		if n != def && cfg.UsesBackend(n) {
			names = append(names, n)
		}
	}
	var opened []openedBackend
	var closers []func() error
	defer func() { st.closers = append(closers, st.closers...) }()
	for _, n := range names {
		if n == config.BackendEmbedded {
			st.sqlite = sqlitePath(cfg)
		}
		ob, closer, err := openBackend(ctx, n, cfg, log, client)
		if closer != nil {
			closers = append([]func() error{closer}, closers...)
		}
		if err != nil {
			return err
		}
		opened = append(opened, ob)
	}
	st.pingQueues(opened)
	if len(opened) == 1 {
		st.Queue = opened[0].b
		if def != st.Kind {
			st.Kind += ", jobs on " + def
		}
		return nil
	}
	var routes []mux.Route
	for _, ob := range opened[1:] {
		routes = append(routes, mux.Route{Name: ob.name, Backend: ob.b, Queues: queuesOn(cfg, ob.name)})
	}
	m, err := mux.New(opened[0].b, routes...)
	if err != nil {
		return fmt.Errorf("server: queues.backends: %w", err)
	}
	st.Queue = m
	st.Kind += ", jobs on " + strings.Join(names, "+")
	return nil
}

// queuesOn lists the queues placed on backend, sorted.
func queuesOn(cfg *config.Config, backend string) []string {
	var qs []string
	for q, b := range cfg.Placement() {
		if b == backend {
			qs = append(qs, q)
		}
	}
	slices.Sort(qs)
	return qs
}

// openBackend opens one job backend and returns how to close it (nil when
// nothing was opened).
func openBackend(ctx context.Context, name string, cfg *config.Config, log *slog.Logger, client redis.UniversalClient) (openedBackend, func() error, error) {
	ob := openedBackend{name: name}
	switch name {
	case config.BackendEmbedded:
		b, err := openSQLite(cfg)
		if err != nil {
			return ob, nil, err
		}
		ob.b = b
		ob.ping = func(ctx context.Context) error { _, err := b.Stats(ctx); return err }
		return ob, b.Close, nil
	case config.BackendRedis:
		if client == nil {
			return ob, nil, errors.New("server: a queue is on redis but storage.redis_url is not set")
		}
		b, err := openRedisQueue(client, cfg, log)
		if err != nil {
			return ob, nil, err
		}
		ob.b = b // the storage's PING (Stores.ping) checks it
		var closer func() error
		if c, ok := b.(interface{ Close() error }); ok {
			closer = c.Close
		}
		return ob, closer, nil
	case config.BackendRabbitMQ:
		b, closer, err := openLane(cfg, log, client)
		if err != nil {
			return ob, nil, err
		}
		ob.b = b
		ob.ping = func(ctx context.Context) error { _, err := b.Stats(ctx); return err }
		return ob, closer, nil
	case config.BackendPostgres:
		b, err := openPostgres(ctx, cfg)
		if err != nil {
			return ob, nil, err
		}
		ob.b = b
		ob.ping = func(ctx context.Context) error { return b.Pool().Ping(ctx) }
		return ob, b.Close, nil
	}
	return ob, nil, fmt.Errorf("server: unknown queue backend %q", name)
}

// openLane connects the RabbitMQ lane with the config's options, declaring
// the queues placed on it so that stats show them from the start, and
// returns it with how to close it and its Scheduler.
func openLane(cfg *config.Config, log *slog.Logger, client redis.UniversalClient) (*amqpqueue.Backend, func() error, error) {
	r := cfg.Queues.RabbitMQ
	opts := amqpqueue.Options{
		Prefix: r.Prefix, Queues: queuesOn(cfg, config.BackendRabbitMQ), Prefetch: r.Prefetch, Consumers: r.Consumers,
		MaxRedeliveries: r.MaxRedeliveries, Priorities: r.Priorities, Publishers: r.Publishers,
		DeadLetterTTL: r.DeadLetterTTL.D(), DeadLetterMax: r.DeadLetterMax, Logger: log,
	}
	if cfg.DefaultBackendOf() == config.BackendRabbitMQ {
		opts.Queues = nil // every unnamed queue: declared on first use
	}
	for _, d := range r.DelayBuckets {
		opts.DelayBuckets = append(opts.DelayBuckets, d.D())
	}
	if r.Recorder == "redis" {
		ret := cfg.Queues.Retention
		rec, err := amqpqueue.NewRedisRecorder(client, amqpqueue.RedisRecorderOptions{
			Prefix:    keyspace.Prefix(cfg.Storage.Prefix),
			Retention: queue.Retention{Completed: ret.Completed.D(), Failed: ret.Failed.D(), Cancelled: ret.Cancelled.D()},
		})
		if err != nil {
			return nil, nil, err
		}
		opts.Recorder = rec
	}
	closeSched := func() error { return nil }
	if r.Scheduler == "redis" {
		s, err := openLaneScheduler(client, cfg, log) // enforce.go
		if err != nil {
			return nil, nil, err
		}
		opts.Scheduler, closeSched = s, s.Close
	}
	b, err := amqpqueue.New(r.URL, opts)
	if err != nil {
		_ = closeSched()
		// The URL may hold a password: the lane's dial errors name the
		// broker's address only.
		return nil, nil, fmt.Errorf("server: queues.rabbitmq: %w", err)
	}
	return b, func() error { err := b.Close(); _ = closeSched(); return err }, nil
}

// pingQueues makes st.Ping check every job backend as well as what it
// checked before (the Redis client), naming the one that fails.
func (st *Stores) pingQueues(opened []openedBackend) {
	prev := st.ping
	st.ping = func(ctx context.Context) error {
		if prev != nil {
			if err := prev(ctx); err != nil {
				return err
			}
		}
		var errs []error
		for _, ob := range opened {
			if ob.ping == nil {
				continue
			}
			if err := ob.ping(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s queue backend: %w", ob.name, err))
			}
		}
		return errors.Join(errs...)
	}
}

// samePlacement reports whether a and b place queues alike: placement is
// bound when the backends open, so a change takes a restart.
func samePlacement(a, b *config.Config) bool {
	qa, qb := a.Queues, b.Queues
	return a.DefaultBackendOf() == b.DefaultBackendOf() && maps.Equal(a.Placement(), b.Placement()) &&
		reflect.DeepEqual(qa.RabbitMQ, qb.RabbitMQ) &&
		a.Webhooks.Lane == b.Webhooks.Lane && a.Webhooks.Queue() == b.Webhooks.Queue()
}

// keepPlacement returns next with cur's placement when they differ,
// logging that the change waits for a restart.
func keepPlacement(cur, next *config.Config, log *slog.Logger) *config.Config {
	if samePlacement(cur, next) {
		return next
	}
	log.Warn("server: queues.backends, queues.default_backend, queues.rabbitmq and webhooks.lane changes take effect at the next start")
	kept := *next
	kept.Queues.Backends, kept.Queues.DefaultBackend, kept.Queues.RabbitMQ = cur.Queues.Backends, cur.Queues.DefaultBackend, cur.Queues.RabbitMQ
	kept.Webhooks.Lane, kept.Webhooks.LaneQueue = cur.Webhooks.Lane, cur.Webhooks.LaneQueue
	return &kept
}
