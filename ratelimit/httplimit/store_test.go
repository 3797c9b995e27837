package httplimit_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/ratelimit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// epoch is a fake-clock start aligned to every window the tests use, so a
// fresh window has exactly its length left.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// mapStore is a fixed-window Store counting in a map under one mutex:
// small enough to read at a glance, atomic and all-or-nothing like the real
// stores, with an injected clock so tests control reset times.
type mapStore struct {
	clock *clock.Fake
	mu    sync.Mutex
	used  map[string]windowCount
	calls int
}

type windowCount struct{ window, used int64 }

func newMapStore() *mapStore {
	return &mapStore{clock: clock.NewFake(epoch), used: map[string]windowCount{}}
}

func (s *mapStore) Consume(_ context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, error) {
	if err := ratelimit.ValidateRequests(reqs); err != nil {
		return ratelimit.Decision{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	now := s.clock.Now().UnixNano()
	results := make([]ratelimit.Result, len(reqs))
	next := make([]windowCount, len(reqs))
	for i, rq := range reqs {
		w := int64(rq.Limit.Window)
		c := windowCount{window: now / w}
		if old := s.used[rq.Key+"|"+rq.Limit.ID()]; old.window == c.window {
			c.used = old.used
		}
		res := ratelimit.Result{Limit: rq.Limit, Allowed: c.used+rq.Cost <= rq.Limit.Quota,
			ResetAfter: time.Duration((c.window+1)*w - now)}
		if res.Allowed {
			c.used += rq.Cost
		} else {
			res.RetryAfter = res.ResetAfter
		}
		res.Used, res.Remaining = c.used, max(0, rq.Limit.Quota-c.used)
		results[i], next[i] = res, c
	}
	d := ratelimit.Decide(results)
	if d.Allowed {
		for i, rq := range reqs {
			s.used[rq.Key+"|"+rq.Limit.ID()] = next[i]
		}
	}
	return d, nil
}

func (s *mapStore) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// downStore fails every call the way an unreachable store does.
type downStore struct{}

func (downStore) Consume(_ context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, error) {
	if err := ratelimit.ValidateRequests(reqs); err != nil {
		return ratelimit.Decision{}, err
	}
	return ratelimit.Decision{}, &ratelimit.StoreError{Op: "consume", Err: errors.New("connection refused")}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestMapStoreCountsPerWindow(t *testing.T) {
	t.Parallel()
	s := newMapStore()
	req := ratelimit.Request{Key: "k", Limit: ratelimit.PerSecond(2), Cost: 1}
	var got []bool
	for range 3 {
		d, err := s.Consume(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Allowed)
	}
	s.clock.Advance(time.Second)
	d, _ := s.Consume(context.Background(), req)
	got = append(got, d.Allowed)
	want := []bool{true, true, false, true}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("allowed = %v, want %v", got, want)
		}
	}
}
