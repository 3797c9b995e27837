package ratelimit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

func TestLimitValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		limit ratelimit.Limit
		err   string // "" for valid
	}{
		{"per second", ratelimit.PerSecond(1), ""},
		{"per minute", ratelimit.PerMinute(10), ""},
		{"per hour", ratelimit.PerHour(1000), ""},
		{"1ms window", ratelimit.Per(1, time.Millisecond), ""},
		{"odd window", ratelimit.Per(3, 1500*time.Millisecond), ""},
		{"token bucket with burst", ratelimit.PerSecond(5).WithBurst(20), ""},
		{"quota 0", ratelimit.PerSecond(0), "ratelimit: Limit.Quota must be a positive integer, got 0"},
		{"negative quota", ratelimit.PerSecond(-3), "ratelimit: Limit.Quota must be a positive integer, got -3"},
		{"window 0", ratelimit.Per(1, 0), "ratelimit: Limit.Window must be at least 1ms, got 0s"},
		{"window under 1ms", ratelimit.Per(1, 999*time.Microsecond), "ratelimit: Limit.Window must be at least 1ms, got 999µs"},
		{"window not whole ms", ratelimit.Per(1, 1001*time.Microsecond), "ratelimit: Limit.Window must be a whole number of milliseconds, got 1.001ms"},
		{"unknown algorithm", ratelimit.PerSecond(1).With(3), "ratelimit: Limit.Algorithm unknown algorithm 3"},
		{"negative burst", ratelimit.Limit{Quota: 1, Window: time.Second, Algorithm: ratelimit.TokenBucket, Burst: -1}, "ratelimit: Limit.Burst must not be negative, got -1"},
	}
	for _, tc := range tests {
		err := tc.limit.Validate()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: Validate = %v, want nil", tc.name, err)
		case tc.err != "" && (err == nil || err.Error() != tc.err || !errors.Is(err, ratelimit.ErrInvalidArgument)):
			t.Errorf("%s: Validate = %v, want %q matching ErrInvalidArgument", tc.name, err, tc.err)
		}
	}
}

func TestLimitAccessors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		limit    ratelimit.Limit
		id, str  string
		capacity int64
	}{
		{ratelimit.PerSecond(5), "f1000", "5 per 1s (fixed-window)", 5},
		{ratelimit.PerMinute(10).With(ratelimit.SlidingWindow), "s60000", "10 per 1m0s (sliding-window)", 10},
		{ratelimit.PerHour(7).With(ratelimit.TokenBucket), "t3600000", "7 per 1h0m0s (token-bucket)", 7},
		{ratelimit.PerSecond(2).WithBurst(9), "t1000", "2 per 1s (token-bucket) burst 9", 9},
		{ratelimit.PerSecond(2).With(ratelimit.FixedWindow), "f1000", "2 per 1s (fixed-window)", 2},
	}
	for _, tc := range tests {
		if got := tc.limit.ID(); got != tc.id {
			t.Errorf("%v: ID = %q, want %q", tc.limit, got, tc.id)
		}
		if got := tc.limit.String(); got != tc.str {
			t.Errorf("String = %q, want %q", got, tc.str)
		}
		if got := tc.limit.Capacity(); got != tc.capacity {
			t.Errorf("%v: Capacity = %d, want %d", tc.limit, got, tc.capacity)
		}
	}
}

func TestParseAlgorithm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want ratelimit.Algorithm
		ok   bool
	}{
		{"", ratelimit.FixedWindow, true},
		{"fixed-window", ratelimit.FixedWindow, true},
		{"sliding-window", ratelimit.SlidingWindow, true},
		{"token-bucket", ratelimit.TokenBucket, true},
		{"gcra", 0, false},
		{"Fixed-Window", 0, false},
	}
	for _, tc := range tests {
		got, err := ratelimit.ParseAlgorithm(tc.in)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("ParseAlgorithm(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if !tc.ok && !errors.Is(err, ratelimit.ErrInvalidArgument) {
			t.Errorf("ParseAlgorithm(%q) error = %v, want ErrInvalidArgument", tc.in, err)
		}
		if tc.ok && tc.in != "" {
			if s := got.String(); s != tc.in {
				t.Errorf("%v.String() = %q, want the parsed name %q", got, s, tc.in)
			}
		}
	}
	if s := ratelimit.Algorithm(9).String(); s != "algorithm(9)" {
		t.Errorf("unknown algorithm String = %q, want algorithm(9)", s)
	}
}

func TestValidateRequests(t *testing.T) {
	t.Parallel()
	l := ratelimit.PerMinute(5)
	tests := []struct {
		name  string
		reqs  []ratelimit.Request
		field string // "" for valid
	}{
		{"one", []ratelimit.Request{{Key: "k", Limit: l, Cost: 1}}, ""},
		{"peek", []ratelimit.Request{{Key: "k", Limit: l}}, ""},
		{"two limits on a key", []ratelimit.Request{{Key: "k", Limit: l, Cost: 1}, {Key: "k", Limit: ratelimit.PerHour(5), Cost: 1}}, ""},
		{"same window, other algorithm", []ratelimit.Request{{Key: "k", Limit: l, Cost: 1}, {Key: "k", Limit: l.With(ratelimit.SlidingWindow), Cost: 1}}, ""},
		{"none", nil, "requests"},
		{"empty key", []ratelimit.Request{{Limit: l, Cost: 1}}, "Request.Key"},
		{"negative cost", []ratelimit.Request{{Key: "k", Limit: l, Cost: -1}}, "Request.Cost"},
		{"bad limit", []ratelimit.Request{{Key: "k", Limit: ratelimit.PerMinute(0), Cost: 1}}, "Limit.Quota"},
		{"same counter twice", []ratelimit.Request{{Key: "k", Limit: l, Cost: 1}, {Key: "k", Limit: ratelimit.PerMinute(9), Cost: 1}}, "requests"},
	}
	for _, tc := range tests {
		err := ratelimit.ValidateRequests(tc.reqs)
		var inv *ratelimit.InvalidArgumentError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.field != "" && (!errors.As(err, &inv) || inv.Field != tc.field):
			t.Errorf("%s: %v, want an InvalidArgumentError on %s", tc.name, err, tc.field)
		}
	}
}

// TestCostAboveCapacityIsRefused: a cost that no window can hold is a
// *CostExceedsQuotaError naming the limit, in a multi-limit call whichever
// limit it is; the capacity itself is fine.
func TestCostAboveCapacityIsRefused(t *testing.T) {
	t.Parallel()
	small, bucket := ratelimit.PerSecond(2), ratelimit.PerSecond(10).WithBurst(3)
	tests := []struct {
		name      string
		reqs      []ratelimit.Request
		wantLimit *ratelimit.Limit // nil for valid
		wantMsg   string
	}{
		{"cost at the quota", []ratelimit.Request{{Key: "k", Limit: small, Cost: 2}}, nil, ""},
		{"cost above the quota", []ratelimit.Request{{Key: "k", Limit: small, Cost: 3}}, &small,
			"ratelimit: Request.Cost 3 exceeds the quota 2 of limit 2 per 1s (fixed-window), so it can never be admitted"},
		{"cost above the burst", []ratelimit.Request{{Key: "k", Limit: bucket, Cost: 4}}, &bucket,
			"ratelimit: Request.Cost 4 exceeds the burst 3 of limit 10 per 1s (token-bucket) burst 3, so it can never be admitted"},
		{"above one limit of two", []ratelimit.Request{{Key: "k", Limit: ratelimit.PerHour(100), Cost: 3}, {Key: "k", Limit: small, Cost: 3}}, &small, ""},
	}
	for _, tc := range tests {
		err := ratelimit.ValidateRequests(tc.reqs)
		var ce *ratelimit.CostExceedsQuotaError
		switch {
		case tc.wantLimit == nil && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.wantLimit == nil:
		case !errors.As(err, &ce) || !errors.Is(err, ratelimit.ErrCostExceedsQuota) || !errors.Is(err, ratelimit.ErrInvalidArgument):
			t.Errorf("%s: %v, want a CostExceedsQuotaError matching ErrCostExceedsQuota and ErrInvalidArgument", tc.name, err)
		case ce.Limit != *tc.wantLimit:
			t.Errorf("%s: error names %v, want %v", tc.name, ce.Limit, *tc.wantLimit)
		case tc.wantMsg != "" && err.Error() != tc.wantMsg:
			t.Errorf("%s: message %q, want %q", tc.name, err, tc.wantMsg)
		}
	}
	if errors.Is(ratelimit.InvalidArgument("Request.Cost", "x"), ratelimit.ErrCostExceedsQuota) {
		t.Error("an InvalidArgumentError matches ErrCostExceedsQuota, want only the cost error to")
	}
}

func TestDecision(t *testing.T) {
	t.Parallel()
	a := ratelimit.Result{Limit: ratelimit.PerSecond(10), Allowed: true, Used: 2, Remaining: 8}
	b := ratelimit.Result{Limit: ratelimit.PerMinute(100), Allowed: true, Used: 97, Remaining: 3}
	short := ratelimit.Result{Limit: ratelimit.PerSecond(1), Used: 1, RetryAfter: 300 * time.Millisecond}
	long := ratelimit.Result{Limit: ratelimit.PerHour(5), Used: 5, RetryAfter: 20 * time.Minute}
	tests := []struct {
		name        string
		results     []ratelimit.Result
		allowed     bool
		retryAfter  time.Duration
		denied      *ratelimit.Result
		tightest    *ratelimit.Result
		hasTightest bool
	}{
		{"empty", nil, true, 0, nil, nil, false},
		{"all allowed", []ratelimit.Result{a, b}, true, 0, nil, &b, true},
		{"one denies", []ratelimit.Result{a, short, b}, false, short.RetryAfter, &short, &short, true},
		{"longest denial wins", []ratelimit.Result{short, a, long}, false, long.RetryAfter, &long, &long, true},
	}
	for _, tc := range tests {
		d := ratelimit.Decide(tc.results)
		if d.Allowed != tc.allowed || d.RetryAfter != tc.retryAfter {
			t.Errorf("%s: Decide = allowed %v retry %v, want %v and %v", tc.name, d.Allowed, d.RetryAfter, tc.allowed, tc.retryAfter)
		}
		got, ok := d.Denied()
		if ok != (tc.denied != nil) || (ok && got != *tc.denied) {
			t.Errorf("%s: Denied = %+v, %v; want %+v", tc.name, got, ok, tc.denied)
		}
		got, ok = d.Tightest()
		if ok != tc.hasTightest || (ok && got != *tc.tightest) {
			t.Errorf("%s: Tightest = %+v, %v; want %+v", tc.name, got, ok, tc.tightest)
		}
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	cause := errors.New("dial tcp: refused")
	se := &ratelimit.StoreError{Op: "consume", Err: cause}
	if !errors.Is(se, ratelimit.ErrStoreUnavailable) || !errors.Is(se, cause) || se.Error() != "ratelimit: store consume: dial tcp: refused" {
		t.Errorf("StoreError %q: want ErrStoreUnavailable, the cause, and the op in the message", se)
	}
	inv := ratelimit.InvalidArgument("Options.Prefix", "must end with %q", ":")
	if !errors.Is(inv, ratelimit.ErrInvalidArgument) || inv.Error() != `ratelimit: Options.Prefix must end with ":"` {
		t.Errorf("InvalidArgument = %q", inv)
	}
	le := &ratelimit.LimitedError{Scene: "ip", Policy: "login"}
	if !errors.Is(le, ratelimit.ErrLimited) || le.Error() != "ratelimit: ip/login limited" || le.RetryAfter() != 0 {
		t.Errorf("LimitedError without a decision = %q", le)
	}
	if ratelimit.FailOpen.String() != "open" || ratelimit.FailClosed.String() != "closed" {
		t.Error("FailureMode.String: want open and closed")
	}
}
