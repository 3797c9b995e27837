package redislimit

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

func TestDenyCacheStaysBounded(t *testing.T) {
	t.Parallel()
	c := newDenyCache(4)
	now := time.Unix(1_700_000_000, 0)
	l := ratelimit.PerMinute(1)
	for i := range 50 {
		key := "k" + strconv.Itoa(i)
		reqs := []ratelimit.Request{{Key: key, Limit: l, Cost: 1}}
		d := ratelimit.Decide([]ratelimit.Result{{Limit: l, Used: 1, ResetAfter: time.Minute, RetryAfter: time.Minute}})
		c.remember(now, []string{key}, reqs, d)
		if n := len(c.m); n > 4 {
			t.Fatalf("after %d denials: %d entries, want at most 4", i+1, n)
		}
	}
	reqs := []ratelimit.Request{{Key: "k49", Limit: l, Cost: 1}}
	if _, ok := c.answer(now, []string{"k49"}, reqs); !ok {
		t.Error("the latest denial was evicted")
	}
	if _, ok := c.answer(now.Add(time.Minute), []string{"k49"}, reqs); ok {
		t.Error("denial answered at its RetryAfter, want it expired")
	}
}
