package memlimit

import (
	"math"
	"math/bits"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// state is one counter, in 24 bytes so that an entry's hot fields share a
// cache line. All times are microseconds since the Unix epoch; the zero
// value is an empty counter for every algorithm.
//
// The fixed window keeps the start of its window in win and the cost
// counted in it in cur (a window exists only while cur > 0). The sliding
// window uses win (the index of the clock-aligned sub-window cur was
// counted in), cur (the cost counted in it) and prev (the cost counted in
// sub-window win-1). The token bucket keeps its theoretical arrival time
// in win, and caches its emission interval in cur together with the quota
// it was computed for in prev, saving a division per call while the quota
// stays the same (the window cannot change: it is part of the counter's
// identity).
type state struct {
	win, cur, prev int64
}

// expires is when s holds nothing any more for limit l, so the entry can
// be dropped without changing any answer.
func (s state) expires(l ratelimit.Limit) int64 {
	w := l.Window.Microseconds()
	switch l.Algorithm {
	case ratelimit.FixedWindow:
		return s.win + w
	case ratelimit.SlidingWindow:
		return (s.win + 2) * w
	}
	return s.win // tat
}

// decide judges cost n against l at now (µs) on the counter *s, turning
// *s into the state to keep if the whole decision is allowed and writing
// the result as if it were into *r. The formulas are the ones documented
// in package limittest. Pointers, not values: this is the hot path and the
// structs are large enough for copies to show.
func decide(s *state, l *ratelimit.Limit, n, now int64, r *ratelimit.Result) {
	switch l.Algorithm {
	case ratelimit.FixedWindow:
		fixed(s, l, n, now, r)
	case ratelimit.SlidingWindow:
		sliding(s, l, n, now, r)
	default:
		bucket(s, l, n, now, r)
	}
}

// unchanged writes into *r the result a limit that would have admitted its
// request reports inside a denied decision: the counter as it was (a peek).
func unchanged(s state, l *ratelimit.Limit, now int64, r *ratelimit.Result) {
	decide(&s, l, 0, now, r)
}

// roll moves a sliding-window counter to the sub-window of now and returns
// the sub-window's start.
func roll(s *state, now, w int64) int64 {
	if start := s.win * w; now >= start && now-start < w {
		return start // still in the same window: no division needed
	}
	k := now / w
	switch s.win {
	case k:
	case k - 1:
		s.prev, s.cur = s.cur, 0
	default:
		s.prev, s.cur = 0, 0
	}
	s.win = k
	return k * w
}

// dur converts microseconds to a Duration, saturating: a token bucket with
// an enormous burst can be further from full than a Duration can say.
func dur(us int64) time.Duration {
	if us > math.MaxInt64/int64(time.Microsecond) {
		return math.MaxInt64
	}
	return time.Duration(us) * time.Microsecond
}

// fixed decides on a window started by the first counted call: the
// window [win, win+w) is current while cur > 0 and now is inside it.
func fixed(s *state, l *ratelimit.Limit, n, now int64, r *ratelimit.Result) {
	q, w := l.Quota, l.Window.Microseconds()
	if s.cur > 0 && now-s.win >= w {
		s.cur = 0 // the window is over
	}
	r.Limit, r.Allowed, r.RetryAfter, r.ResetAfter = *l, n <= q && s.cur <= q-n, 0, 0
	switch {
	case r.Allowed && n > 0:
		if s.cur == 0 {
			s.win = now // the first counted call starts the window
		}
		s.cur += n
	case !r.Allowed && n <= q:
		r.RetryAfter = dur(s.win + w - now)
	}
	r.Used, r.Remaining = s.cur, max(0, q-s.cur)
	if s.cur > 0 {
		r.ResetAfter = dur(s.win + w - now)
	}
}

func sliding(s *state, l *ratelimit.Limit, n, now int64, r *ratelimit.Result) {
	q, w := l.Quota, l.Window.Microseconds()
	start := roll(s, now, w)
	e := now - start
	est := satAdd(mulDivCeil(s.prev, w-e, w), s.cur)
	r.Limit, r.Allowed, r.RetryAfter, r.ResetAfter = *l, n <= q && est <= q-n, 0, 0
	if r.Allowed {
		s.cur += n
		est += n
	} else if n <= q {
		r.RetryAfter = dur(slidingRetry(s, q, n, w, e) - now + start)
	}
	r.Used, r.Remaining = est, max(0, q-est)
	switch {
	case s.cur > 0:
		r.ResetAfter = dur(start + 2*w - now)
	case s.prev > 0:
		r.ResetAfter = dur(start + w - now)
	}
}

// slidingRetry returns the offset from the current sub-window's start at
// which cost n first fits, given no other traffic: the first e1 in this
// sub-window with ceil(prev × (w-e1) / w) <= q-n-cur, else the first e2 in
// the next with ceil(cur × (w-e2) / w) <= q-n.
func slidingRetry(s *state, q, n, w, e int64) int64 {
	if a := q - n - s.cur; a >= 0 && s.prev > 0 {
		if e1 := w - mulDiv(a, w, s.prev); e1 < w {
			return e1
		}
	}
	var e2 int64
	if s.cur > 0 {
		e2 = max(0, w-mulDiv(q-n, w, s.cur))
	}
	return w + e2
}

func bucket(s *state, l *ratelimit.Limit, n, now int64, r *ratelimit.Result) {
	tat := &s.win
	if s.prev != l.Quota {
		s.cur, s.prev = (l.Window.Microseconds()+l.Quota-1)/l.Quota, l.Quota
	}
	t, c := s.cur, l.Capacity()
	tau := satMul(c, t)
	base := max(*tat, now)
	next := satAdd(base, satMul(n, t))
	r.Limit, r.Allowed, r.RetryAfter = *l, n <= c && next-now <= tau, 0
	if r.Allowed {
		*tat = next
	} else {
		*tat = base
		if n <= c {
			r.RetryAfter = dur(next - now - tau)
		}
	}
	r.Used = (*tat - now + t - 1) / t
	r.Remaining = max(0, c-r.Used)
	r.ResetAfter = dur(*tat - now)
}

// mulDiv returns floor(a×b / d) for non-negative a, b and positive d
// without overflowing, saturating at MaxInt64.
func mulDiv(a, b, d int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return div128(hi, lo, d)
}

// mulDivCeil returns ceil(a×b / d) for non-negative a, b and positive d,
// as mulDiv.
func mulDivCeil(a, b, d int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	lo, carry := bits.Add64(lo, uint64(d-1), 0)
	return div128(hi+carry, lo, d)
}

func div128(hi, lo uint64, d int64) int64 {
	if hi == 0 { // the usual case: a plain 64-bit division
		return int64(min(lo/uint64(d), math.MaxInt64))
	}
	if hi >= uint64(d) {
		return math.MaxInt64
	}
	quo, _ := bits.Div64(hi, lo, uint64(d))
	if quo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(quo)
}

func satMul(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
