package limittest

import (
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// model is a direct transcription of the package documentation: the
// reference every store's answers are compared with. It is written for
// clarity, not speed, and works on microseconds since an origin that is a
// multiple of every window it sees (so the sliding window's sub-windows
// are aligned as the store's are).
type model struct {
	counters map[counterID]*modelCounter
}

type counterID struct{ key, limit string }

type modelCounter struct {
	start  int64 // start of the fixed window c was counted in
	window int64 // index of the sub-window c was counted in (sliding window)
	c      int64 // cost counted in that window
	prev   int64 // cost counted in the sub-window before it (sliding window)
	tat    int64 // theoretical arrival time (token bucket)
}

func newModel() *model { return &model{counters: map[counterID]*modelCounter{}} }

func us(d time.Duration) int64         { return int64(d / time.Microsecond) }
func dur(v int64) time.Duration        { return time.Duration(v) * time.Microsecond }
func ceilDiv(a, b int64) int64         { return (a + b - 1) / b }
func emission(l ratelimit.Limit) int64 { return ceilDiv(us(l.Window), l.Quota) }

// consume decides reqs at t, all or nothing, like a store.
func (m *model) consume(t int64, reqs ...ratelimit.Request) ratelimit.Decision {
	results := make([]ratelimit.Result, len(reqs))
	allowed := true
	for i, r := range reqs {
		results[i] = m.judge(t, r, false)
		allowed = allowed && results[i].Allowed
	}
	if !allowed {
		// Nothing moves: a limit that would have admitted its request
		// reports its counter as it is, like a peek.
		for i, r := range reqs {
			if results[i].Allowed {
				r.Cost = 0
				results[i] = m.judge(t, r, false)
			}
		}
		return ratelimit.Decide(results)
	}
	for i, r := range reqs {
		results[i] = m.judge(t, r, true)
	}
	return ratelimit.Decide(results)
}

// judge returns r's result at t; commit applies it (only called when the
// whole decision is allowed).
func (m *model) judge(t int64, r ratelimit.Request, commit bool) ratelimit.Result {
	id := counterID{r.Key, r.Limit.ID()}
	st := m.counters[id]
	if st == nil {
		st = &modelCounter{tat: -1 << 62}
		m.counters[id] = st
	}
	cp := *st
	var res ratelimit.Result
	switch r.Limit.Algorithm {
	case ratelimit.FixedWindow:
		res = fixed(&cp, t, r)
	case ratelimit.SlidingWindow:
		res = sliding(&cp, t, r)
	default:
		res = bucket(&cp, t, r)
	}
	if commit {
		*st = cp
	}
	return res
}

// roll moves the sliding-window counter to the sub-window of t.
func roll(st *modelCounter, t, w int64) (s int64) {
	k := t / w
	switch {
	case st.window == k:
	case st.window == k-1:
		st.prev, st.c = st.c, 0
	default:
		st.prev, st.c = 0, 0
	}
	st.window = k
	return k * w
}

func fixed(st *modelCounter, t int64, r ratelimit.Request) ratelimit.Result {
	q, w, n := r.Limit.Quota, us(r.Limit.Window), r.Cost
	if st.c > 0 && t >= st.start+w {
		st.c = 0 // the window is over: the counter holds nothing
	}
	res := ratelimit.Result{Limit: r.Limit, Allowed: st.c+n <= q}
	if res.Allowed && n > 0 {
		if st.c == 0 {
			st.start = t // the first counted call starts the window
		}
		st.c += n
	} else if !res.Allowed {
		res.RetryAfter = dur(st.start + w - t)
	}
	res.Used = st.c
	res.Remaining = max(0, q-st.c)
	if st.c > 0 {
		res.ResetAfter = dur(st.start + w - t)
	}
	return res
}

func sliding(st *modelCounter, t int64, r ratelimit.Request) ratelimit.Result {
	q, w, n := r.Limit.Quota, us(r.Limit.Window), r.Cost
	s := roll(st, t, w)
	e := t - s
	est := ceilDiv(st.prev*(w-e), w) + st.c
	res := ratelimit.Result{Limit: r.Limit, Allowed: est+n <= q}
	if res.Allowed {
		st.c += n
		est += n
	} else {
		res.RetryAfter = dur(slidingRetry(st.prev, st.c, q, n, w, e, s, t))
	}
	res.Used = est
	res.Remaining = max(0, q-est)
	switch {
	case st.c > 0:
		res.ResetAfter = dur(s + 2*w - t)
	case st.prev > 0:
		res.ResetAfter = dur(s + w - t)
	}
	return res
}

func slidingRetry(p, c, q, n, w, e, s, t int64) int64 {
	if a := q - n - c; a >= 0 && p > 0 {
		if e1 := w - a*w/p; e1 < w {
			return e1 - e
		}
	}
	var e2 int64
	if c > 0 {
		e2 = max(0, w-(q-n)*w/c)
	}
	return s + w - t + e2
}

func bucket(st *modelCounter, t int64, r ratelimit.Request) ratelimit.Result {
	T, c, n := emission(r.Limit), r.Limit.Capacity(), r.Cost
	tau := c * T
	base := max(st.tat, t)
	next := base + n*T
	res := ratelimit.Result{Limit: r.Limit, Allowed: next-t <= tau}
	if res.Allowed {
		st.tat = next
	} else {
		st.tat = base
		res.RetryAfter = dur(next - t - tau)
	}
	res.Used = ceilDiv(st.tat-t, T)
	res.Remaining = max(0, c-res.Used)
	res.ResetAfter = dur(st.tat - t)
	return res
}
