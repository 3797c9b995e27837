package redisqueue_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/redisqueue"
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

// BenchmarkOutageEnqueue measures how long an Enqueue takes to fail while
// Redis refuses connections (one caller, as one HTTP job call), with the
// client's breaker (the default) and without it (as before there was
// one), with go-redis's default client options as the server uses them.
// Each run includes the outage's onset: the calls that fail before the
// breaker opens.
//
//	go test -run '^$' -bench OutageEnqueue -benchtime 200x ./queue/redisqueue/
func BenchmarkOutageEnqueue(b *testing.B) {
	for _, off := range []bool{false, true} {
		name := "breaker"
		if off {
			name = "no-breaker"
		}
		b.Run(name, func(b *testing.B) { benchOutageEnqueue(b, redisqueue.Options{Logger: quiet, DisableBreaker: off}) })
	}
}

func benchOutageEnqueue(b *testing.B, opts redisqueue.Options) {
	redis.SetLogger(quietRedis{}) // its failed dials would garble the results
	c := redis.NewClient(&redis.Options{Addr: deadAddr(b)})
	b.Cleanup(func() { _ = c.Close() })
	be, err := redisqueue.New(c, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	cl := queue.NewClient(be)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"}); err == nil {
			b.Fatal("Enqueue succeeded with Redis down")
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
