package memlimit

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

var (
	_ ratelimit.PartialConsumer = (*Store)(nil)
	_ ratelimit.Reserver        = (*Store)(nil)
	_ ratelimit.Resetter        = (*Store)(nil)
)

// ConsumeAtMost grants as much of the requests' cost as every limit
// admits, in one locked section. See ratelimit.PartialConsumer.
func (s *Store) ConsumeAtMost(ctx context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, int64, error) {
	if err := s.check(ctx, "consume at most"); err != nil {
		return ratelimit.Decision{}, 0, err
	}
	if err := ratelimit.ValidateAtMost(reqs); err != nil {
		return ratelimit.Decision{}, 0, err
	}
	now := s.now()
	slots, unlock := s.lockSlots(reqs)
	defer unlock()
	results := make([]ratelimit.Result, len(reqs))
	peekAll(slots, reqs, now, results)
	granted := reqs[0].Cost
	for _, r := range results {
		granted = min(granted, r.Remaining)
	}
	switch {
	case reqs[0].Cost == 0:
	case granted > 0:
		decideAll(slots, reqs, granted, now, results)
	default: // nothing fits: report when a cost of 1 would
		decideAll(slots, reqs, 1, now, results)
	}
	return ratelimit.Decide(results), granted, nil
}

// Reserve decides reqs, letting token buckets admit their cost up to
// maxWait later. See ratelimit.Reserver.
func (s *Store) Reserve(ctx context.Context, maxWait time.Duration, reqs ...ratelimit.Request) (ratelimit.Reservation, error) {
	if err := s.check(ctx, "reserve"); err != nil {
		return ratelimit.Reservation{}, err
	}
	if err := ratelimit.ValidateRequests(reqs); err != nil {
		return ratelimit.Reservation{}, err
	}
	now := s.now()
	slots, unlock := s.lockSlots(reqs)
	defer unlock()
	results := make([]ratelimit.Result, len(reqs))
	peekAll(slots, reqs, now, results)
	var delay time.Duration
	windowsFit := true
	for i, r := range reqs {
		if r.Limit.Algorithm == ratelimit.TokenBucket {
			delay = max(delay, ratelimit.ReserveDelay(r.Limit, results[i].ResetAfter, r.Cost))
		} else if r.Cost > results[i].Remaining {
			windowsFit = false
		}
	}
	if delay == 0 || delay > maxWait || !windowsFit {
		// Plain decision: allowed at once, or a denial (a bucket needing a
		// delay denies now), its RetryAfter the delay needed.
		decideAll(slots, reqs, -1, now, results)
		return ratelimit.Reservation{Decision: ratelimit.Decide(results)}, nil
	}
	at := now + delay.Microseconds()
	for i := range reqs {
		r := &reqs[i]
		st := slots[i].st
		if r.Limit.Algorithm == ratelimit.TokenBucket {
			decide(&st, &r.Limit, r.Cost, at, &results[i])
			results[i].ResetAfter += delay
		} else {
			decide(&st, &r.Limit, r.Cost, now, &results[i])
		}
		if r.Cost > 0 {
			slots[i].put(r, st, now)
		}
	}
	return ratelimit.Reservation{Decision: ratelimit.Decide(results), Delay: delay}, nil
}

// Refund gives back cost counted earlier. See ratelimit.Reserver.
func (s *Store) Refund(ctx context.Context, reqs ...ratelimit.Request) error {
	if err := ratelimit.ValidateRequests(reqs); err != nil {
		return err
	}
	now := s.now()
	slots, unlock := s.lockSlots(reqs)
	defer unlock()
	for i := range reqs {
		r := &reqs[i]
		if slots[i].e == nil || r.Cost == 0 {
			continue
		}
		st := slots[i].st
		refund(&st, r.Limit, r.Cost, now)
		slots[i].put(r, st, now)
	}
	return nil
}

// refund takes n back from the counter *st at now (µs), as far as it
// still holds it.
func refund(st *state, l ratelimit.Limit, n, now int64) {
	w := l.Window.Microseconds()
	switch l.Algorithm {
	case ratelimit.FixedWindow:
		if st.cur > 0 && now-st.win < w {
			st.cur = max(0, st.cur-n)
		}
	case ratelimit.SlidingWindow:
		roll(st, now, w)
		if st.cur > 0 {
			st.cur = max(0, st.cur-n)
		} else {
			st.prev = max(0, st.prev-n)
		}
	default:
		t := (w + l.Quota - 1) / l.Quota
		st.win = max(now, st.win-satMul(n, t))
	}
}

// Reset forgets key's counters for limits and its in-flight leases. See
// ratelimit.Resetter.
func (s *Store) Reset(ctx context.Context, key string, limits ...ratelimit.Limit) (int, error) {
	if key == "" {
		return 0, ratelimit.InvalidArgument("key", "must not be empty")
	}
	n := s.leases.reset(key)
	if len(limits) == 0 {
		return n, nil
	}
	var reqs []ratelimit.Request
	seen := map[string]bool{}
	for _, l := range limits {
		if !seen[l.ID()] { // one counter per ID: remove it once
			seen[l.ID()] = true
			reqs = append(reqs, ratelimit.Request{Key: key, Limit: l})
		}
	}
	slots, unlock := s.lockSlots(reqs)
	defer unlock()
	for _, sl := range slots {
		if sl.e != nil {
			sl.sh.release(sl.sh.remove(sl.e))
			n++
		}
	}
	return n, nil
}

// check fails a call whose context is done, as Consume does.
func (s *Store) check(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return &ratelimit.StoreError{Op: op, Err: err}
	}
	return nil
}
