package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

func req(key string, l ratelimit.Limit, cost int64) ratelimit.Request {
	return ratelimit.Request{Key: key, Limit: l, Cost: cost}
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	tests := []struct {
		name   string
		client redis.UniversalClient
		opts   redislimit.Options
		field  string
	}{
		{"nil client", nil, redislimit.Options{}, "client"},
		{"prefix without colon", c, redislimit.Options{Prefix: "sluice"}, "Options.Prefix"},
		{"prefix with glob", c, redislimit.Options{Prefix: "a*b:"}, "Options.Prefix"},
		{"negative batch", c, redislimit.Options{MaxBatch: -1}, "Options.MaxBatch"},
		{"negative pipelines", c, redislimit.Options{Pipelines: -2}, "Options.Pipelines"},
		{"negative deny cache", c, redislimit.Options{DenyCacheSize: -1}, "Options.DenyCacheSize"},
	}
	for _, tc := range tests {
		s, err := redislimit.New(tc.client, tc.opts)
		var ia *ratelimit.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != tc.field {
			t.Errorf("%s: New = (%v, %v), want an InvalidArgumentError on %s", tc.name, s, err, tc.field)
		}
	}
}

// TestKeysAndExpiry checks the physical key of every algorithm and that
// every key written expires, on the server's clock.
func TestKeysAndExpiry(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	s := b.store(t, redislimit.Options{Prefix: "app:"})
	key := "rate-limit:member:export:{member:42}"
	tests := []struct {
		limit   ratelimit.Limit
		physKey string
		maxTTL  time.Duration
	}{
		{ratelimit.PerMinute(5), "app:" + key + ":f60000", time.Minute},
		{ratelimit.PerMinute(5).With(ratelimit.SlidingWindow), "app:" + key + ":s60000", 2 * time.Minute},
		{ratelimit.PerMinute(5).WithBurst(10), "app:" + key + ":t60000", time.Minute},
	}
	for _, tc := range tests {
		d, err := s.Consume(t.Context(), req(key, tc.limit, 2))
		if err != nil || !d.Allowed {
			t.Fatalf("%s: Consume = %+v, %v; want allowed", tc.limit, d, err)
		}
		if !b.mini.Exists(tc.physKey) {
			t.Errorf("%s: key %q not written; keys: %v", tc.limit, tc.physKey, b.mini.Keys())
			continue
		}
		if ttl := b.mini.TTL(tc.physKey); ttl <= 0 || ttl > tc.maxTTL {
			t.Errorf("%s: TTL of %q = %v, want in (0, %v]", tc.limit, tc.physKey, ttl, tc.maxTTL)
		}
	}
	if got := len(b.mini.Keys()); got != len(tests) {
		t.Errorf("%d keys written, want %d: %v", got, len(tests), b.mini.Keys())
	}
}

// TestServerClock counts on Redis TIME: a store without a clock admits the
// quota and denies the rest, and a peek writes nothing.
func TestServerClock(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) backend{"miniredis": miniBackend, "redis": realBackend} {
		t.Run(name, func(t *testing.T) { testServerClock(t, open(t)) })
	}
}

func testServerClock(t *testing.T, b backend) {
	{
		s := b.store(t, redislimit.Options{})
		for _, l := range []ratelimit.Limit{
			ratelimit.PerHour(3), ratelimit.PerHour(3).With(ratelimit.SlidingWindow), ratelimit.PerHour(3).WithBurst(3),
		} {
			key := "clock:{" + l.Algorithm.String() + "}"
			if d, err := s.Consume(t.Context(), req(key, l, 0)); err != nil || d.Results[0].Remaining != 3 {
				t.Fatalf("%s: peek = %+v, %v; want Remaining 3", l, d, err)
			}
			var allowed []bool
			for range 5 {
				d, err := s.Consume(t.Context(), req(key, l, 1))
				if err != nil {
					t.Fatalf("%s: %v", l, err)
				}
				allowed = append(allowed, d.Allowed)
			}
			want := []bool{true, true, true, false, false}
			if !equal(allowed, want) {
				t.Errorf("%s: allowed %v, want %v", l, allowed, want)
			}
		}
		// On the server's clock too, a fixed window starts at its first
		// counted call, whatever the time of day: it lasts exactly W.
		l := ratelimit.PerMinute(1)
		d, err := s.Consume(t.Context(), req("clock:{first}", l, 1))
		if err != nil || !d.Allowed || d.Results[0].ResetAfter != time.Minute {
			t.Errorf("first call on the server clock: %+v, %v; want allowed with ResetAfter exactly 1m", d, err)
		}
		d, err = s.Consume(t.Context(), req("clock:{first}", l, 1))
		if r := d.Results; err != nil || d.Allowed || r[0].RetryAfter <= 50*time.Second || r[0].RetryAfter > time.Minute {
			t.Errorf("second call on the server clock: %+v, %v; want denied until a minute after the first", d, err)
		}
	}
}

// TestEarlierFixedWindowValueReadsAsEnded: a fixed-window counter written
// by a version that aligned windows to the clock ("<window index> <count>")
// reads as a window that has ended, so the subject starts afresh once.
func TestEarlierFixedWindowValueReadsAsEnded(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	clk := fakeClock()
	s := b.store(t, redislimit.Options{Clock: clk})
	index := clk.Now().UnixMicro() / time.Minute.Microseconds()
	if err := b.mini.Set("sluice:k:{a}:f60000", fmt.Sprintf("%d 5", index)); err != nil {
		t.Fatal(err)
	}
	d, err := s.Consume(t.Context(), req("k:{a}", ratelimit.PerMinute(5), 1))
	if err != nil || !d.Allowed || d.Results[0].Used != 1 || d.Results[0].ResetAfter != time.Minute {
		t.Errorf("Consume over an earlier value = %+v, %v; want allowed, Used 1, a new 1m window", d, err)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestInjectedClockKeysOutliveRealExpiry: with an injected clock, keys live
// at least InjectedClockMinTTL, so a slow test run cannot lose counts to
// Redis's real-time expiry.
func TestInjectedClockKeysOutliveRealExpiry(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	s := b.store(t, redislimit.Options{Clock: fakeClock()})
	if _, err := s.Consume(t.Context(), req("k", ratelimit.Per(1, time.Millisecond), 1)); err != nil {
		t.Fatal(err)
	}
	if ttl := b.mini.TTL("sluice:k:f1"); ttl < redislimit.InjectedClockMinTTL {
		t.Errorf("TTL = %v, want at least %v", ttl, redislimit.InjectedClockMinTTL)
	}
}

func TestKeyRules(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	s := b.store(t, redislimit.Options{})
	_, err := s.Consume(t.Context(), req("sluice:rate-limit:x", ratelimit.PerMinute(1), 1))
	var ia *ratelimit.InvalidArgumentError
	if !errors.As(err, &ia) || ia.Field != "Request.Key" {
		t.Errorf("key carrying the prefix: err = %v, want an InvalidArgumentError on Request.Key", err)
	}
	if n := len(b.mini.Keys()); n != 0 {
		t.Errorf("%d keys written, want none", n)
	}
}

// TestInvalidBeforeRedis: invalid requests fail as invalid arguments even
// when Redis is down, so failure modes never mask them.
func TestInvalidBeforeRedis(t *testing.T) {
	t.Parallel()
	for _, batching := range []bool{true, false} {
		s := downStore(t, redislimit.Options{DisableBatching: !batching})
		_, err := s.Consume(t.Context(), req("k", ratelimit.PerMinute(0), 1))
		if !errors.Is(err, ratelimit.ErrInvalidArgument) || errors.Is(err, ratelimit.ErrStoreUnavailable) {
			t.Errorf("batching %v: err = %v, want ErrInvalidArgument only", batching, err)
		}
	}
}

// downStore returns a store whose client points at a port nobody listens on.
func downStore(t *testing.T, opts redislimit.Options) *redislimit.Store {
	t.Helper()
	m := miniredis.RunT(t)
	addr := m.Addr()
	m.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	s, err := redislimit.New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestOutageIsStoreUnavailable(t *testing.T) {
	t.Parallel()
	for _, batching := range []bool{true, false} {
		s := downStore(t, redislimit.Options{DisableBatching: !batching})
		_, err := s.Consume(t.Context(), req("k", ratelimit.PerMinute(1), 1))
		if !errors.Is(err, ratelimit.ErrStoreUnavailable) {
			t.Errorf("batching %v: err = %v, want ErrStoreUnavailable", batching, err)
		}
		if err == nil || !strings.Contains(err.Error(), "redislimit:") {
			t.Errorf("batching %v: err = %v, want a message naming redislimit", batching, err)
		}
		if err := s.Ping(t.Context()); !errors.Is(err, ratelimit.ErrStoreUnavailable) {
			t.Errorf("batching %v: Ping = %v, want ErrStoreUnavailable", batching, err)
		}
	}
}

// TestRecoversAfterRestart: a Redis that went away and came back empty
// (without the script) serves decisions again without intervention.
func TestRecoversAfterRestart(t *testing.T) {
	t.Parallel()
	for _, batching := range []bool{true, false} {
		m := miniredis.RunT(t)
		addr := m.Addr()
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		// Without the breaker, which would wait for its next probe
		// (TestBreakerRecovers covers recovery through it).
		s, err := redislimit.New(c, redislimit.Options{DisableBatching: !batching, DisableBreaker: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		l := ratelimit.PerMinute(10)
		if _, err := s.Consume(t.Context(), req("k", l, 1)); err != nil {
			t.Fatalf("before the outage: %v", err)
		}
		m.Close()
		if _, err := s.Consume(t.Context(), req("k", l, 1)); !errors.Is(err, ratelimit.ErrStoreUnavailable) {
			t.Fatalf("during the outage: err = %v, want ErrStoreUnavailable", err)
		}
		fresh := miniredis.NewMiniRedis()
		if err := fresh.StartAddr(addr); err != nil {
			t.Skipf("cannot listen on %s again: %v", addr, err)
		}
		t.Cleanup(fresh.Close)
		d, err := s.Consume(t.Context(), req("k", l, 1))
		if err != nil || !d.Allowed || d.Results[0].Used != 1 {
			t.Fatalf("after the restart: %+v, %v; want allowed with Used 1 (fresh server)", d, err)
		}
		if err := s.Ping(t.Context()); err != nil {
			t.Errorf("Ping after the restart: %v", err)
		}
	}
}

// TestForeignValues: a counter key holding something else (garbage, or
// another type) fails its decision with a clear error and moves nothing,
// also for the decision's other keys.
func TestForeignValues(t *testing.T) {
	t.Parallel()
	for _, batching := range []bool{true, false} {
		b := miniBackend(t)
		s := b.store(t, redislimit.Options{DisableBatching: !batching})
		if err := b.mini.Set("sluice:k:{a}:f60000", "garbage"); err != nil {
			t.Fatal(err)
		}
		b.mini.HSet("sluice:k:{a}:t60000", "field", "1")
		l := ratelimit.PerMinute(5)
		for _, bad := range []ratelimit.Request{req("k:{a}", l, 1), req("k:{a}", l.With(ratelimit.TokenBucket), 1)} {
			_, err := s.Consume(t.Context(), req("k:{a}", l.With(ratelimit.SlidingWindow), 1), bad)
			if !errors.Is(err, ratelimit.ErrStoreUnavailable) || !strings.Contains(err.Error(), "malformed counter") {
				t.Errorf("batching %v, %s: err = %v, want ErrStoreUnavailable naming the malformed counter", batching, bad.Limit, err)
			}
		}
		if b.mini.Exists("sluice:k:{a}:s60000") {
			t.Errorf("batching %v: the decision's good counter was written", batching)
		}
		if got, _ := b.mini.Get("sluice:k:{a}:f60000"); got != "garbage" {
			t.Errorf("batching %v: value = %q, want it left alone", batching, got)
		}
	}
}

func TestCloseAndPing(t *testing.T) {
	t.Parallel()
	for _, batching := range []bool{true, false} {
		b := miniBackend(t)
		s := b.store(t, redislimit.Options{DisableBatching: !batching})
		if err := s.Ping(t.Context()); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		_, err := s.Consume(t.Context(), req("k", ratelimit.PerMinute(1), 1))
		if !errors.Is(err, redislimit.ErrClosed) || !errors.Is(err, ratelimit.ErrStoreUnavailable) {
			t.Errorf("Consume after Close: err = %v, want ErrClosed and ErrStoreUnavailable", err)
		}
		if err := s.Ping(t.Context()); !errors.Is(err, redislimit.ErrClosed) {
			t.Errorf("Ping after Close: err = %v, want ErrClosed", err)
		}
	}
}

// TestLimiterOnRedis runs a scene through the store: the key a Limiter
// builds lands under the prefix with the subject in a hash tag. The store
// timeout is generous: with the default 100ms, a loaded machine made
// miniredis answer late and the scene's fail-open let the call through.
func TestLimiterOnRedis(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	s := b.store(t, redislimit.Options{})
	lim, err := ratelimit.Define(s, ratelimit.Definition[string]{
		Scene:   "member",
		Policy:  func(string) string { return "export-usage" },
		Subject: func(id string) []string { return []string{"member", id} },
		Limits: func(string) []ratelimit.Limit {
			return []ratelimit.Limit{ratelimit.PerMinute(1), ratelimit.PerHour(5)}
		},
	}, ratelimit.WithTimeout(testutil.Patience))
	if err != nil {
		t.Fatal(err)
	}
	got := []bool{}
	for _, id := range []string{"42", "42", "7"} {
		ok, err := lim.Allow(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ok)
	}
	if want := []bool{true, false, true}; !equal(got, want) {
		t.Errorf("Allow = %v, want %v", got, want)
	}
	want := "sluice:rate-limit:member:export-usage:{member:42}:f60000"
	if !b.mini.Exists(want) {
		t.Errorf("key %q missing; keys: %v", want, b.mini.Keys())
	}
	if _, err := keyspace.DefaultPrefix.Logical(want); err != nil {
		t.Errorf("Logical(%q): %v", want, err)
	}
}

// TestConcurrentCallersGetTheirOwnResults: batched calls on distinct keys
// with distinct costs each see their own counter.
func TestConcurrentCallersGetTheirOwnResults(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	s := b.store(t, redislimit.Options{MaxBatch: 8, Pipelines: 1})
	const n = 100
	errs := make(chan error, n)
	for i := range n {
		go func() {
			// Half the callers can be cancelled, so they queue for a
			// batch; the others may send their own pipeline.
			ctx := context.Background()
			if i%2 == 0 {
				ctx = t.Context()
			}
			cost := int64(i%7 + 1)
			key := "own:" + string(rune('A'+i%26)) + ":" + strings.Repeat("x", i/26)
			d, err := s.Consume(ctx, req(key, ratelimit.PerMinute(100), cost))
			switch {
			case err != nil:
				errs <- err
			case !d.Allowed || d.Results[0].Used != cost:
				errs <- errors.New("call " + key + ": wrong result")
			default:
				errs <- nil
			}
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
