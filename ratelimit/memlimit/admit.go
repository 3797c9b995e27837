package memlimit

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

var _ ratelimit.Admitter = (*Store)(nil)

// gateTable holds closed gates: per key, when it opens, in µs since the
// epoch. Its zero value is empty and ready. Lock order: gates, then
// leases, then shards.
type gateTable struct {
	mu sync.Mutex
	m  map[string]int64
}

// closedFor returns how long key stays closed at now, dropping it once
// open. The table must be locked.
func (t *gateTable) closedFor(key string, now int64) int64 {
	until, ok := t.m[key]
	if !ok {
		return 0
	}
	if until <= now {
		delete(t.m, key)
		return 0
	}
	return until - now
}

// CloseUntil closes a gate. See ratelimit.Admitter.
func (s *Store) CloseUntil(ctx context.Context, key string, until time.Time) (time.Time, error) {
	if key == "" {
		return time.Time{}, ratelimit.InvalidArgument("key", "must not be empty")
	}
	if err := s.check(ctx, "close"); err != nil {
		return time.Time{}, err
	}
	now, u := s.now(), until.UnixMicro()
	t := &s.gates
	t.mu.Lock()
	defer t.mu.Unlock()
	if left := t.closedFor(key, now); now+left > u {
		u = now + left
	}
	if u > now {
		if t.m == nil {
			t.m = map[string]int64{}
		}
		t.m[key] = u
	}
	return time.UnixMicro(u), nil
}

// ClosedFor reports how long a gate stays closed. See ratelimit.Admitter.
func (s *Store) ClosedFor(ctx context.Context, key string) (time.Duration, error) {
	if err := s.check(ctx, "closed for"); err != nil {
		return 0, err
	}
	t := &s.gates
	t.mu.Lock()
	defer t.mu.Unlock()
	return dur(t.closedFor(key, s.now())), nil
}

// Charge counts every cost whatever the limits say. See
// ratelimit.Admitter.
func (s *Store) Charge(ctx context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, error) {
	if err := s.check(ctx, "charge"); err != nil {
		return ratelimit.Decision{}, err
	}
	if err := validateCharge(reqs); err != nil {
		return ratelimit.Decision{}, err
	}
	now := s.now()
	slots, unlock := s.lockSlots(reqs)
	defer unlock()
	results := make([]ratelimit.Result, len(reqs))
	for i := range reqs {
		r := &reqs[i]
		st := slots[i].st
		if r.Cost > 0 {
			charge(&st, &r.Limit, r.Cost, now)
			slots[i].put(r, st, now)
		}
		unchanged(st, &r.Limit, now, &results[i])
	}
	return ratelimit.Decide(results), nil
}

// validateCharge checks Charge's arguments: as ValidateRequests, except
// that a cost may exceed the limit's capacity (that is what a charge is
// for).
func validateCharge(reqs []ratelimit.Request) error {
	peeks := make([]ratelimit.Request, len(reqs))
	for i, r := range reqs {
		if r.Cost < 0 {
			return ratelimit.InvalidArgument("Request.Cost", "must not be negative, got %d", r.Cost)
		}
		peeks[i] = r
		peeks[i].Cost = 0
	}
	return ratelimit.ValidateRequests(peeks)
}

// charge counts n on *st at now (µs) without judging it: the state
// decide would have kept had it admitted n with no ceiling.
func charge(st *state, l *ratelimit.Limit, n, now int64) {
	w := l.Window.Microseconds()
	switch l.Algorithm {
	case ratelimit.FixedWindow:
		if st.cur == 0 || now-st.win >= w {
			st.win, st.cur = now, 0
		}
		st.cur = satAdd(st.cur, n)
	case ratelimit.SlidingWindow:
		roll(st, now, w)
		st.cur = satAdd(st.cur, n)
	default:
		t := (w + l.Quota - 1) / l.Quota
		st.cur, st.prev = t, l.Quota
		st.win = satAdd(max(st.win, now), satMul(n, t))
	}
}

// Admit decides gates, leases and groups as one. See ratelimit.Admitter.
func (s *Store) Admit(ctx context.Context, r ratelimit.AdmitRequest) (ratelimit.Admission, error) {
	if err := s.check(ctx, "admit"); err != nil {
		return ratelimit.Admission{}, err
	}
	if err := r.Validate(); err != nil {
		return ratelimit.Admission{}, err
	}
	now := s.now()
	s.gates.mu.Lock()
	defer s.gates.mu.Unlock()
	t := &s.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	var flat []ratelimit.Request
	for _, g := range r.Groups {
		flat = append(append(flat, g.Requests...), g.Fallback...)
	}
	var slots []slot
	if len(flat) > 0 {
		var unlock func()
		slots, unlock = s.lockSlots(flat)
		defer unlock()
	}
	a := ratelimit.Admission{Allowed: true}
	s.judgeGatesAndLeases(&a, r, now)
	next := judgeGroups(&a, r.Groups, slots, flat, now)
	if !a.Allowed {
		return a, nil
	}
	commitGroups(&a, r.Groups, slots, flat, next, now)
	a.Leases = make([]ratelimit.Lease, len(r.Leases))
	for i, l := range r.Leases {
		set := t.m[l.Key]
		if set == nil {
			if t.m == nil {
				t.m = map[string]map[string]int64{}
			}
			set = map[string]int64{}
			t.m[l.Key] = set
		}
		t.seq++
		id := strconv.FormatUint(t.seq, 36)
		set[id] = now + l.InFlight.TTL.Microseconds()
		a.Held[i]++
		a.Leases[i] = ratelimit.Lease{Key: l.Key, ID: id, TTL: l.InFlight.TTL}
	}
	return a, nil
}

// judgeGatesAndLeases fills the gate and lease parts of *a. The gate and
// lease tables must be locked.
func (s *Store) judgeGatesAndLeases(a *ratelimit.Admission, r ratelimit.AdmitRequest, now int64) {
	a.Gates = make([]time.Duration, len(r.Gates))
	for i, g := range r.Gates {
		if left := s.gates.closedFor(g, now); left > 0 {
			a.Gates[i], a.Allowed = dur(left), false
			a.RetryAfter = max(a.RetryAfter, a.Gates[i])
		}
	}
	a.Held = make([]int64, len(r.Leases))
	a.LeaseRetry = make([]time.Duration, len(r.Leases))
	for i, l := range r.Leases {
		set := s.leases.live(l.Key, now)
		a.Held[i] = int64(len(set))
		if a.Held[i] >= l.InFlight.Max {
			a.LeaseRetry[i], a.Allowed = dur(earliest(set)-now), false
			a.RetryAfter = max(a.RetryAfter, a.LeaseRetry[i])
		}
	}
}

// judgeGroups judges every request of every group for its cost on the
// counters as they stand, chooses each group's set and fills a.Groups. It
// returns the state each request would leave.
func judgeGroups(a *ratelimit.Admission, groups []ratelimit.RequestGroup, slots []slot, flat []ratelimit.Request, now int64) []state {
	next := make([]state, len(flat))
	results := make([]ratelimit.Result, len(flat))
	for i := range flat {
		var j ratelimit.Result
		next[i] = slots[i].st
		decide(&next[i], &flat[i].Limit, flat[i].Cost, now, &j)
		unchanged(slots[i].st, &flat[i].Limit, now, &results[i])
		results[i].Allowed, results[i].RetryAfter = j.Allowed, j.RetryAfter
	}
	a.Groups = make([]ratelimit.GroupResult, len(groups))
	off := 0
	for gi, g := range groups {
		pref := results[off : off+len(g.Requests)]
		fb := results[off+len(g.Requests) : off+len(g.Requests)+len(g.Fallback)]
		first, retry := ratelimit.ChooseGroup(pref, fb)
		gr := ratelimit.GroupResult{Fallback: !first, Results: pref, RetryAfter: retry}
		if !first {
			gr.Results = fb
		}
		if retry > 0 || !ratelimit.Decide(gr.Results).Allowed {
			a.Allowed = false
			a.RetryAfter = max(a.RetryAfter, retry)
		}
		a.Groups[gi] = gr
		off += len(g.Requests) + len(g.Fallback)
	}
	return next
}

// commitGroups writes the chosen requests' states and reports their
// results after counting.
func commitGroups(a *ratelimit.Admission, groups []ratelimit.RequestGroup, slots []slot, flat []ratelimit.Request, next []state, now int64) {
	off := 0
	for gi, g := range groups {
		from, n := off, len(g.Requests)
		if a.Groups[gi].Fallback {
			from, n = off+len(g.Requests), len(g.Fallback)
		}
		for i := from; i < from+n; i++ {
			if flat[i].Cost > 0 {
				slots[i].put(&flat[i], next[i], now)
			}
			unchanged(next[i], &flat[i].Limit, now, &a.Groups[gi].Results[i-from])
		}
		off += len(g.Requests) + len(g.Fallback)
	}
}
