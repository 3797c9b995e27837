package redislimit_test

import (
	"context"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// deadAddr returns a local address nobody listens on: connections to it
// are refused, as they are while Redis is down.
func deadAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// quietRedis drops go-redis's own log lines.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// BenchmarkOutageFailOpen measures a fail-open limiter, as the server
// builds one for a scene (100 ms store timeout), while its Redis refuses
// connections: decisions per second and their latency, from 64
// goroutines, with the client's breaker (the default) and without it (as
// before there was one). The client has go-redis's defaults, as the
// server's does. Each run includes the outage's onset: the calls that
// fail before the breaker opens.
//
//	go test -run '^$' -bench OutageFailOpen -benchtime 5s ./ratelimit/redislimit/
func BenchmarkOutageFailOpen(b *testing.B) {
	for _, off := range []bool{false, true} {
		name := "breaker"
		if off {
			name = "no-breaker"
		}
		b.Run(name, func(b *testing.B) { benchOutage(b, redislimit.Options{DisableBreaker: off}) })
	}
}

func benchOutage(b *testing.B, opts redislimit.Options) {
	redis.SetLogger(quietRedis{}) // its failed dials would garble the results
	c := redis.NewClient(&redis.Options{Addr: deadAddr(b)})
	b.Cleanup(func() { _ = c.Close() })
	s, err := redislimit.New(c, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	lim, err := ratelimit.Define(s, ratelimit.Definition[string]{
		Scene:   "bench",
		Subject: func(id string) []string { return []string{"team", id} },
		Limits:  func(string) []ratelimit.Limit { return []ratelimit.Limit{ratelimit.PerMinute(100)} },
	}, ratelimit.WithTimeout(100*time.Millisecond), ratelimit.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			start := time.Now()
			ok, err := lim.Allow(ctx, "t")
			lat[next.Add(1)-1] = time.Since(start)
			if err != nil || !ok {
				b.Errorf("Allow during the outage = %v, %v; want allowed (fail open)", ok, err)
				return
			}
		}
	})
	b.StopTimer()
	reportRate(b)
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
