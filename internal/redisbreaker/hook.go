package redisbreaker

import (
	"context"
	"net"
	"runtime"
	"sync"
	"weak"

	"github.com/redis/go-redis/v9"
)

var _ redis.Hook = (*Breaker)(nil)

// DialHook implements redis.Hook: a failed dial counts as a failure at
// once, so that the breaker opens while the first commands of an outage
// are still in go-redis's dial retries, not after them. Dials always go
// ahead: go-redis's pool, once it has seen as many failed dials as it has
// connections, stops dialing for commands until its own background dial
// succeeds, and that dial must not be refused.
func (b *Breaker) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			b.record(err)
		}
		return conn, err
	}
}

// ProcessHook implements redis.Hook: a command fails at once while the
// breaker is open, and its outcome is counted otherwise.
func (b *Breaker) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Err() != nil {
			return next(ctx, cmd) // fails without Redis: nothing to learn
		}
		if b.open.Load() {
			if err := b.admit(ctx, func() func(context.Context) error { return pinger(next) }); err != nil {
				cmd.SetErr(err)
				return err
			}
		}
		err := next(ctx, cmd)
		b.record(err)
		return err
	}
}

// ProcessPipelineHook implements redis.Hook for pipelines and
// transactions: the whole pipeline fails at once while open, and it counts
// as one command otherwise.
func (b *Breaker) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if ctx.Err() != nil {
			return next(ctx, cmds)
		}
		if b.open.Load() {
			if err := b.admit(ctx, func() func(context.Context) error {
				return pinger(func(ctx context.Context, cmd redis.Cmder) error { return next(ctx, []redis.Cmder{cmd}) })
			}); err != nil {
				for _, c := range cmds {
					c.SetErr(err)
				}
				return err
			}
		}
		err := next(ctx, cmds)
		b.record(err)
		return err
	}
}

// pinger sends a PING through the rest of the hook chain (so through the
// client's own retries and dialer, but not through this breaker again).
func pinger(next redis.ProcessHook) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		return next(ctx, redis.NewStatusCmd(ctx, "ping"))
	}
}

// attached holds the breaker added to each client, keyed by a weak
// pointer so that a client that is dropped is not kept alive here.
var attached sync.Map

// Attach returns the breaker of client c, adding one made with o as a hook
// when c has none yet, so that every store and backend sharing a client
// shares one breaker and each command passes one breaker only. Options
// given after the first Attach on a client are ignored. For a client type
// other than *redis.Client, *redis.ClusterClient and *redis.Ring each call
// adds a new breaker.
func Attach(c redis.UniversalClient, o Options) (*Breaker, error) {
	switch c := c.(type) {
	case *redis.Client:
		return attach(c, c, o)
	case *redis.ClusterClient:
		return attach(c, c, o)
	case *redis.Ring:
		return attach(c, c, o)
	}
	b, err := New(o)
	if err != nil {
		return nil, err
	}
	c.AddHook(b)
	return b, nil
}

func attach[T any](p *T, c redis.UniversalClient, o Options) (*Breaker, error) {
	key := weak.Make(p)
	if b, ok := attached.Load(key); ok {
		return b.(*Breaker), nil
	}
	b, err := New(o)
	if err != nil {
		return nil, err
	}
	if prev, loaded := attached.LoadOrStore(key, b); loaded {
		return prev.(*Breaker), nil
	}
	c.AddHook(b)
	runtime.AddCleanup(p, func(k weak.Pointer[T]) { attached.Delete(k) }, key)
	return b, nil
}
