package redislimit

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

var _ ratelimit.Admitter = (*Store)(nil)

// gateKey is the physical key of a gate: in the same hash tag as the
// logical key's counters.
func (s *Store) gateKey(key string) string { return string(s.prefix) + key + ":gate" }

// logical checks that key is a logical key, without the prefix.
func (s *Store) logical(field, key string) error {
	if strings.HasPrefix(key, string(s.prefix)) {
		return ratelimit.InvalidArgument(field, "%q must be a logical key, without the prefix %q", key, s.prefix)
	}
	return nil
}

// CloseUntil closes a gate in one script run. See ratelimit.Admitter.
func (s *Store) CloseUntil(ctx context.Context, key string, until time.Time) (time.Time, error) {
	if key == "" {
		return time.Time{}, ratelimit.InvalidArgument("key", "must not be empty")
	}
	if err := s.logical("key", key); err != nil {
		return time.Time{}, err
	}
	if err := s.begin(ctx, "close"); err != nil {
		return time.Time{}, err
	}
	left, err := gateScript.Run(ctx, s.client, []string{s.gateKey(key)}, s.now(), until.UnixMicro(), s.minTTL).Int64()
	if err != nil {
		return time.Time{}, storeError("close", err)
	}
	// The reply is relative to the script's clock: read it against ours.
	return s.localNow().Add(time.Duration(left) * time.Microsecond), nil
}

// ClosedFor reports how long a gate stays closed. See ratelimit.Admitter.
func (s *Store) ClosedFor(ctx context.Context, key string) (time.Duration, error) {
	if err := s.begin(ctx, "closed for"); err != nil {
		return 0, err
	}
	left, err := gateScript.Run(ctx, s.client, []string{s.gateKey(key)}, s.now(), "", s.minTTL).Int64()
	if err != nil {
		return 0, storeError("closed for", err)
	}
	return time.Duration(left) * time.Microsecond, nil
}

// Charge counts every cost whatever the limits say, in one script run.
// See ratelimit.Admitter.
func (s *Store) Charge(ctx context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, error) {
	peeks := make([]ratelimit.Request, len(reqs))
	for i, r := range reqs {
		if r.Cost < 0 {
			return ratelimit.Decision{}, ratelimit.InvalidArgument("Request.Cost", "must not be negative, got %d", r.Cost)
		}
		peeks[i] = r
		peeks[i].Cost = 0
	}
	if err := ratelimit.ValidateRequests(peeks); err != nil {
		return ratelimit.Decision{}, err
	}
	keys, err := s.keys(reqs)
	if err != nil {
		return ratelimit.Decision{}, err
	}
	if err := s.begin(ctx, "charge"); err != nil {
		return ratelimit.Decision{}, err
	}
	reply, err := chargeScript.Run(ctx, s.client, keys, s.oneDecision(reqs)...).Int64Slice()
	if err != nil {
		return ratelimit.Decision{}, storeError("charge", err)
	}
	d, err := parseReply(reply, keys, peeks)
	if err != nil {
		return ratelimit.Decision{}, storeError("charge", err)
	}
	return d, nil
}

// Admit decides gates, leases and groups in one script run. See
// ratelimit.Admitter. On a cluster client every key must share a slot.
func (s *Store) Admit(ctx context.Context, r ratelimit.AdmitRequest) (ratelimit.Admission, error) {
	if err := r.Validate(); err != nil {
		return ratelimit.Admission{}, err
	}
	keys, args, ids, err := s.admitCall(r)
	if err != nil {
		return ratelimit.Admission{}, err
	}
	if err := s.begin(ctx, "admit"); err != nil {
		return ratelimit.Admission{}, err
	}
	reply, err := admitScript.Run(ctx, s.client, keys, args...).Int64Slice()
	if err != nil {
		return ratelimit.Admission{}, storeError("admit", err)
	}
	a, err := parseAdmission(reply, r, ids)
	if err != nil {
		return ratelimit.Admission{}, storeError("admit", err)
	}
	return a, nil
}

// admitCall builds admit.lua's keys and arguments and the lease IDs.
func (s *Store) admitCall(r ratelimit.AdmitRequest) ([]string, []any, []string, error) {
	var keys []string
	for _, g := range r.Gates {
		if err := s.logical("AdmitRequest.Gates", g); err != nil {
			return nil, nil, nil, err
		}
		keys = append(keys, s.gateKey(g))
	}
	args := []any{s.now(), s.minTTL, len(r.Gates), len(r.Leases), len(r.Groups)}
	ids := make([]string, len(r.Leases))
	for i, l := range r.Leases {
		if err := s.logical("LeaseRequest.Key", l.Key); err != nil {
			return nil, nil, nil, err
		}
		ids[i] = newLeaseID()
		keys = append(keys, s.leaseKey(l.Key))
		args = append(args, l.InFlight.Max, l.InFlight.TTL.Microseconds(), ids[i])
	}
	var flat []ratelimit.Request
	for _, g := range r.Groups {
		args = append(args, len(g.Requests), len(g.Fallback))
		flat = append(append(flat, g.Requests...), g.Fallback...)
	}
	if len(flat) > 0 {
		// keys checks the prefix and, on a cluster, the slot of the
		// counters; the gates and leases must share it too.
		ck, err := s.keys(flat)
		if err != nil {
			return nil, nil, nil, err
		}
		keys = append(keys, ck...)
	}
	if s.cluster && len(keys) > 0 {
		first := keySlot(keys[0])
		for _, k := range keys[1:] {
			if keySlot(k) != first {
				return nil, nil, nil, ratelimit.InvalidArgument("AdmitRequest",
					"keys must share one Redis Cluster slot: %q and %q do not; put the shared part in one {hash tag}", keys[0], k)
			}
		}
	}
	return keys, append(args, requestArgs(flat)...), ids, nil
}

// parseAdmission turns admit.lua's reply into an Admission.
func parseAdmission(reply []int64, r ratelimit.AdmitRequest, ids []string) (ratelimit.Admission, error) {
	g, l := len(r.Gates), len(r.Leases)
	head := 1 + g + 2*l + 2*len(r.Groups)
	if len(reply) < head || reply[0] != 0 && reply[0] != 1 {
		return ratelimit.Admission{}, fmt.Errorf("malformed admit reply: %d integers", len(reply))
	}
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	a := ratelimit.Admission{Allowed: reply[0] == 1, Gates: make([]time.Duration, g),
		Held: make([]int64, l), LeaseRetry: make([]time.Duration, l), Groups: make([]ratelimit.GroupResult, len(r.Groups))}
	for i := range g {
		a.Gates[i] = us(reply[1+i])
		a.RetryAfter = max(a.RetryAfter, a.Gates[i])
	}
	for i := range l {
		a.Held[i], a.LeaseRetry[i] = reply[1+g+2*i], us(reply[2+g+2*i])
		a.RetryAfter = max(a.RetryAfter, a.LeaseRetry[i])
	}
	rest := reply[head:]
	for k, grp := range r.Groups {
		choice, wait := reply[1+g+2*l+2*k], reply[2+g+2*l+2*k]
		reqs := grp.Requests
		if choice == 2 {
			reqs = grp.Fallback
		} else if choice != 1 {
			return ratelimit.Admission{}, fmt.Errorf("malformed admit reply: choice %d", choice)
		}
		if len(rest) < replyWidth*len(reqs) {
			return ratelimit.Admission{}, fmt.Errorf("malformed admit reply: short results")
		}
		results, err := judgedResults(rest[:replyWidth*len(reqs)], reqs)
		if err != nil {
			return ratelimit.Admission{}, err
		}
		rest = rest[replyWidth*len(reqs):]
		a.Groups[k] = ratelimit.GroupResult{Fallback: choice == 2, Results: results, RetryAfter: us(wait)}
		a.RetryAfter = max(a.RetryAfter, us(wait))
	}
	if len(rest) != 0 {
		return ratelimit.Admission{}, fmt.Errorf("malformed admit reply: %d integers left over", len(rest))
	}
	if a.Allowed {
		a.Leases = make([]ratelimit.Lease, l)
		for i, lr := range r.Leases {
			a.Leases[i] = ratelimit.Lease{Key: lr.Key, ID: ids[i], TTL: lr.InFlight.TTL}
		}
	}
	return a, nil
}

// judgedResults parses decide.lua's five integers per request. Judged
// results may report Allowed with a RetryAfter of 0 or denied with one,
// as parseResult checks.
func judgedResults(v []int64, reqs []ratelimit.Request) ([]ratelimit.Result, error) {
	out := make([]ratelimit.Result, len(reqs))
	for i, r := range reqs {
		res, err := parseResult(v[i*replyWidth:(i+1)*replyWidth], r)
		if err != nil {
			return nil, fmt.Errorf("malformed admit reply for request %d: %w", i, err)
		}
		out[i] = res
	}
	return out, nil
}
