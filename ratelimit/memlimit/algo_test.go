package memlimit

import (
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/ratelimit"
)

func TestShardsRoundUpToAPowerOfTwo(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want int }{{0, DefaultShards}, {-3, DefaultShards}, {1, 1}, {5, 8}, {64, 64}, {65, 128}}
	for _, tc := range tests {
		s := New(Options{Shards: tc.in, SweepInterval: -1})
		if got := len(s.shards); got != tc.want || s.mask != uint64(tc.want-1) {
			t.Errorf("Shards %d: %d shards (mask %x), want %d", tc.in, got, s.mask, tc.want)
		}
		if got := s.shards[0].max; got != (DefaultMaxKeys+tc.want-1)/tc.want {
			t.Errorf("Shards %d: %d counters per shard, want ceil(%d/%d)", tc.in, got, DefaultMaxKeys, tc.want)
		}
	}
}

// TestHugeValuesDoNotOverflow: quotas and windows near the int64 range
// must give sane answers, not wrapped ones.
func TestHugeValuesDoNotOverflow(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	day := 24 * time.Hour
	tests := []struct {
		name  string
		limit ratelimit.Limit
		cost  int64
	}{
		{"sliding, huge quota, long window", ratelimit.Per(math.MaxInt64/2, 365*day).With(ratelimit.SlidingWindow), math.MaxInt64 / 4},
		{"token bucket, huge burst", ratelimit.Per(1, 365*day).WithBurst(math.MaxInt64 / 2), math.MaxInt64 / 4},
		{"fixed, huge cost", ratelimit.Per(math.MaxInt64, day), math.MaxInt64},
	}
	for _, tc := range tests {
		var st state
		var r ratelimit.Result
		decide(&st, &tc.limit, tc.cost, now, &r)
		if !r.Allowed || r.Used < 0 || r.Remaining < 0 || r.ResetAfter < 0 || r.Used+r.Remaining > tc.limit.Capacity() {
			t.Errorf("%s: first call %+v, want allowed with sane fields", tc.name, r)
		}
		decide(&st, &tc.limit, tc.cost, now+1, &r)
		if r.Used < 0 || r.Remaining < 0 || r.ResetAfter < 0 || r.RetryAfter < 0 {
			t.Errorf("%s: second call %+v, want no negative field", tc.name, r)
		}
	}
}

func TestMulDiv(t *testing.T) {
	t.Parallel()
	tests := []struct{ a, b, d, want, wantCeil int64 }{
		{3, 667_000, 1_000_000, 2, 3},
		{30, 1_000_000, 1_000_000, 30, 30},
		{30, 1, 1_000_000, 0, 1},
		{0, 5, 7, 0, 0},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64, 2, 1, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64, 3, 4, 6917529027641081855, 6917529027641081856}, // 3×(2^63-1)/4, past 64 bits
	}
	for _, tc := range tests {
		if got := mulDiv(tc.a, tc.b, tc.d); got != tc.want {
			t.Errorf("mulDiv(%d, %d, %d) = %d, want %d", tc.a, tc.b, tc.d, got, tc.want)
		}
		if got := mulDivCeil(tc.a, tc.b, tc.d); got != tc.wantCeil {
			t.Errorf("mulDivCeil(%d, %d, %d) = %d, want %d", tc.a, tc.b, tc.d, got, tc.wantCeil)
		}
	}
}

// TestSystemClockReading checks the one-read clock against time.Now: the
// store must place windows where the wall clock does.
func TestSystemClockReading(t *testing.T) {
	t.Parallel()
	s := New(Options{SweepInterval: -1})
	before := time.Now().UnixMicro()
	got := s.now()
	after := time.Now().UnixMicro()
	// The base is read at New, so the reading may trail time.Now by the
	// microsecond truncation of each.
	if got < before-2 || got > after+2 {
		t.Errorf("now() = %d, want within [%d, %d]", got, before, after)
	}
	fake := New(Options{Clock: clock.NewFake(time.UnixMicro(42)), SweepInterval: -1})
	if got := fake.now(); got != 42 {
		t.Errorf("now() on a fake clock = %d, want 42", got)
	}
}

// TestEntryLayout keeps what a hit touches in the first cache line and the
// entry at a size class that keeps entries line-aligned.
func TestEntryLayout(t *testing.T) {
	t.Parallel()
	var e entry
	if got := unsafe.Offsetof(e.exp) + unsafe.Sizeof(e.exp); got > 64 {
		t.Errorf("hot fields end at byte %d, want within the first 64", got)
	}
	if got := unsafe.Sizeof(e); got != 128 {
		t.Errorf("entry is %d bytes, want 128", got)
	}
}
