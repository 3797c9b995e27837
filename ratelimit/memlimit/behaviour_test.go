package memlimit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

func newStore(t *testing.T, opts memlimit.Options) (*memlimit.Store, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(start)
	opts.Clock = clk
	s := memlimit.New(opts)
	t.Cleanup(func() { s.Close() })
	return s, clk
}

func used(t *testing.T, s *memlimit.Store, key string, l ratelimit.Limit) int64 {
	t.Helper()
	r, err := s.ConsumeOne(context.Background(), ratelimit.Request{Key: key, Limit: l})
	if err != nil {
		t.Fatal(err)
	}
	return r.Used
}

func take(t *testing.T, s *memlimit.Store, key string, l ratelimit.Limit) bool {
	t.Helper()
	r, err := s.ConsumeOne(context.Background(), ratelimit.Request{Key: key, Limit: l, Cost: 1})
	if err != nil {
		t.Fatal(err)
	}
	return r.Allowed
}

func TestNoAllocationsForAnExistingKey(t *testing.T) {
	// Not parallel: AllocsPerRun counts every goroutine's allocations.
	for _, l := range []ratelimit.Limit{
		ratelimit.PerSecond(1 << 40),
		ratelimit.PerSecond(1 << 40).With(ratelimit.SlidingWindow),
		ratelimit.PerSecond(1 << 40).With(ratelimit.TokenBucket),
	} {
		s, _ := newStore(t, memlimit.Options{SweepInterval: -1})
		r := ratelimit.Request{Key: "rate-limit:ip:login:{ip:192.0.2.1}", Limit: l, Cost: 1}
		ctx := context.Background()
		s.ConsumeOne(ctx, r)
		got := testing.AllocsPerRun(1000, func() {
			if res, err := s.ConsumeOne(ctx, r); err != nil || !res.Allowed {
				t.Fatalf("ConsumeOne: %+v, %v", res, err)
			}
		})
		if got != 0 {
			t.Errorf("%s: ConsumeOne on an existing key allocates %v times, want 0", l, got)
		}
		// Consume must return a fresh Results slice: that is its only
		// allocation.
		got = testing.AllocsPerRun(1000, func() { s.Consume(ctx, r) })
		if got > 1 {
			t.Errorf("%s: Consume with one request allocates %v times, want at most 1 (the Results slice)", l, got)
		}
	}
}

func TestMaxKeysEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, memlimit.Options{Shards: 1, MaxKeys: 3, SweepInterval: -1})
	l := ratelimit.PerHour(10)
	for _, k := range []string{"a", "b", "c", "a", "d"} {
		take(t, s, k, l)
	}
	if got := s.Len(); got != 3 {
		t.Errorf("Len = %d, want MaxKeys 3", got)
	}
	for _, tc := range []struct {
		key  string
		want int64
	}{{"a", 2}, {"b", 0}, {"c", 1}, {"d", 1}} {
		if got := used(t, s, tc.key, l); got != tc.want {
			t.Errorf("Used(%s) = %d, want %d (b is the least recently used)", tc.key, got, tc.want)
		}
	}
}

func TestPeeksAndDenialsStoreNothing(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, memlimit.Options{SweepInterval: -1})
	l := ratelimit.PerMinute(2)
	ctx := context.Background()
	for i := range 100 {
		key := fmt.Sprint("k", i)
		s.Consume(ctx, ratelimit.Request{Key: key, Limit: l})
		s.Consume(ctx, ratelimit.Request{Key: key, Limit: l, Cost: 3})
	}
	if got := s.Len(); got != 0 {
		t.Errorf("Len after peeks and over-capacity denials = %d, want 0", got)
	}
}

func TestSweepDropsExpiredCounters(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, memlimit.Options{SweepInterval: -1})
	fixed := ratelimit.PerSecond(5)
	sliding := fixed.With(ratelimit.SlidingWindow)
	bucket := ratelimit.PerSecond(5).WithBurst(5) // 200ms per unit
	for _, l := range []ratelimit.Limit{fixed, sliding, bucket} {
		take(t, s, "k", l)
	}
	steps := []struct {
		advance     time.Duration
		wantDropped int
	}{
		{0, 0},
		{200 * time.Millisecond, 1}, // the bucket is full again
		{time.Second, 1},            // the fixed window ended
		{time.Second, 1},            // the sliding window no longer sees it
		{time.Second, 0},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		if got := s.Sweep(); got != st.wantDropped {
			t.Errorf("step %d: Sweep dropped %d, want %d", i, got, st.wantDropped)
		}
	}
	if got := s.Len(); got != 0 {
		t.Errorf("Len = %d, want 0", got)
	}
}

func TestSweeperRunsOnItsInterval(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, memlimit.Options{SweepInterval: time.Minute})
	take(t, s, "k", ratelimit.PerSecond(1))
	clk.BlockUntil(1) // the sweeper waits on its timer
	clk.Advance(time.Minute)
	clk.BlockUntil(1) // it swept and waits again
	if got := s.Len(); got != 0 {
		t.Errorf("Len after a sweep interval = %d, want 0", got)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if !take(t, s, "k", ratelimit.PerSecond(1)) {
		t.Error("after Close: denied, want the store to keep answering")
	}
}

func TestExpiredCountersAreReusedWhenFull(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, memlimit.Options{Shards: 1, MaxKeys: 10, SweepInterval: -1})
	l := ratelimit.PerSecond(1)
	for i := range 1000 {
		if !take(t, s, fmt.Sprint("k", i), l) {
			t.Fatalf("key %d denied, want a fresh counter", i)
		}
		clk.Advance(time.Second)
	}
	if got := s.Len(); got > 10 {
		t.Errorf("Len = %d, want at most MaxKeys 10", got)
	}
}

// TestMultiShardDecisionsUnderContention runs overlapping multi-key
// decisions in every order: lock ordering must prevent deadlock and the
// counts must stay exact.
func TestMultiShardDecisionsUnderContention(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, memlimit.Options{Shards: 4, SweepInterval: -1})
	l := ratelimit.PerHour(300)
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5"}
	var mu sync.Mutex
	admitted := map[string]int64{}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 200 {
				perm := rng.Perm(len(keys))[:1+rng.IntN(3)]
				reqs := make([]ratelimit.Request, len(perm))
				for i, p := range perm {
					reqs[i] = ratelimit.Request{Key: keys[p], Limit: l, Cost: 1}
				}
				d, err := s.Consume(context.Background(), reqs...)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					mu.Lock()
					for _, r := range reqs {
						admitted[r.Key]++
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, k := range keys {
		got := used(t, s, k, l)
		if got != admitted[k] || got > 300 {
			t.Errorf("%s: store counts %d, admitted %d, limit 300", k, got, admitted[k])
		}
	}
}

func TestConsumeOneValidates(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, memlimit.Options{SweepInterval: -1})
	_, err := s.ConsumeOne(context.Background(), ratelimit.Request{Key: "k", Limit: ratelimit.PerSecond(0), Cost: 1})
	if err == nil || err.Error() != "ratelimit: Limit.Quota must be a positive integer, got 0" {
		t.Errorf("err = %v, want the Limit.Quota rule", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.ConsumeOne(ctx, ratelimit.Request{Key: "k", Limit: ratelimit.PerSecond(1), Cost: 1}); err == nil {
		t.Error("ConsumeOne with a canceled context: nil error")
	}
}

// TestExpiredCountersStayUntilNeeded: below MaxKeys an insert drops
// nothing, so keys that return every window are not churned; Sweep drops
// them.
func TestExpiredCountersStayUntilNeeded(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, memlimit.Options{Shards: 1, MaxKeys: 100, SweepInterval: -1})
	l := ratelimit.PerSecond(1)
	for i := range 10 {
		take(t, s, fmt.Sprint("k", i), l)
	}
	clk.Advance(time.Second)
	take(t, s, "new", l)
	if got := s.Len(); got != 11 {
		t.Errorf("Len = %d, want 11 (expired counters kept while there is room)", got)
	}
	if got := s.Sweep(); got != 10 {
		t.Errorf("Sweep dropped %d, want the 10 expired", got)
	}
}
