package redislimit_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// TestDenyCache: a denial is answered in process until the request could be
// allowed again; peeks, cheaper requests and changed limits still go to
// Redis.
func TestDenyCache(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	clk := fakeClock()
	s := b.store(t, redislimit.Options{Clock: clk, DenyCache: true})
	consume := func(reqs ...ratelimit.Request) (ratelimit.Decision, int) {
		t.Helper()
		before := b.mini.CommandCount()
		d, err := s.Consume(t.Context(), reqs...)
		if err != nil {
			t.Fatal(err)
		}
		return d, b.mini.CommandCount() - before
	}
	l := ratelimit.PerMinute(3)
	consume(req("k", l, 2))
	first, _ := consume(req("k", l, 2))
	if first.Allowed {
		t.Fatal("second cost 2 on a quota of 3: allowed")
	}
	clk.Advance(10 * time.Second)

	steps := []struct {
		name      string
		reqs      []ratelimit.Request
		allowed   bool
		fromRedis bool
	}{
		{"same cost", []ratelimit.Request{req("k", l, 2)}, false, false},
		{"higher cost", []ratelimit.Request{req("k", l, 3)}, false, false},
		{"with another key", []ratelimit.Request{req("other", l, 1), req("k", l, 2)}, false, false},
		{"cheaper", []ratelimit.Request{req("k", l, 1)}, true, true},
		{"peek", []ratelimit.Request{req("k", l, 0)}, true, true},
		{"raised quota", []ratelimit.Request{req("k", ratelimit.PerMinute(10), 2)}, true, true},
	}
	for _, st := range steps {
		d, sent := consume(st.reqs...)
		if d.Allowed != st.allowed || (sent > 0) != st.fromRedis {
			t.Errorf("%s: allowed %v with %d commands, want allowed %v from Redis %v", st.name, d.Allowed, sent, st.allowed, st.fromRedis)
		}
	}
	d, _ := consume(req("k", l, 2))
	if want := first.RetryAfter - 10*time.Second; d.RetryAfter != want {
		t.Errorf("cached RetryAfter = %v, want %v (the original less the time since)", d.RetryAfter, want)
	}
	clk.Advance(d.RetryAfter)
	if d, sent := consume(req("k", l, 2)); !d.Allowed || sent == 0 {
		t.Errorf("after RetryAfter: allowed %v with %d commands, want allowed from Redis", d.Allowed, sent)
	}
}
