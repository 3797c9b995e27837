package redislimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

var (
	_ ratelimit.Acquirer        = (*Store)(nil)
	_ ratelimit.PartialConsumer = (*Store)(nil)
	_ ratelimit.Reserver        = (*Store)(nil)
	_ ratelimit.Resetter        = (*Store)(nil)
)

// leaseKey is the physical key of the sorted set holding key's leases,
// scored by expiry: in the same hash tag as key's counters.
func (s *Store) leaseKey(key string) string { return string(s.prefix) + key + ":inflight" }

// begin checks what every operation checks before asking Redis.
func (s *Store) begin(ctx context.Context, op string) error {
	if s.closed.Load() {
		return storeError(op, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return storeError(op, err)
	}
	return nil
}

// oneDecision is decide.lua's argument list for one decision.
func (s *Store) oneDecision(reqs []ratelimit.Request) []any {
	return append([]any{s.now(), s.minTTL, 1, len(reqs)}, requestArgs(reqs)...)
}

// Acquire grants an in-flight lease in one script run with the window
// requests. See ratelimit.Acquirer.
func (s *Store) Acquire(ctx context.Context, r ratelimit.AcquireRequest) (ratelimit.Acquisition, error) {
	if err := r.Validate(); err != nil {
		return ratelimit.Acquisition{}, err
	}
	keys, err := s.keys(r.Requests)
	if err != nil {
		return ratelimit.Acquisition{}, err
	}
	if err := s.begin(ctx, "acquire"); err != nil {
		return ratelimit.Acquisition{}, err
	}
	id := newLeaseID()
	keys = append(keys, s.leaseKey(r.Key))
	args := append(s.oneDecision(r.Requests), r.InFlight.Max, r.InFlight.TTL.Microseconds(), id)
	reply, err := acquireScript.Run(ctx, s.client, keys, args...).Int64Slice()
	if err != nil {
		return ratelimit.Acquisition{}, storeError("acquire", err)
	}
	if len(reply) < 3 {
		return ratelimit.Acquisition{}, storeError("acquire", fmt.Errorf("malformed reply: %d integers", len(reply)))
	}
	d, err := parseReply(reply[3:], keys, r.Requests)
	if err != nil {
		return ratelimit.Acquisition{}, storeError("acquire", err)
	}
	a := ratelimit.Acquisition{Allowed: reply[0] == 1, Held: reply[1], Decision: d,
		InFlightAllowed: reply[2] == 0, RetryAfter: time.Duration(reply[2]) * time.Microsecond}
	if a.Allowed {
		a.Lease = ratelimit.Lease{Key: r.Key, ID: id, TTL: r.InFlight.TTL}
	} else if a.InFlightAllowed {
		a.RetryAfter = d.RetryAfter
	}
	return a, nil
}

func newLeaseID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// Release gives a lease back. See ratelimit.Acquirer.
func (s *Store) Release(ctx context.Context, l ratelimit.Lease) (bool, error) {
	if l.Key == "" || l.ID == "" {
		return false, ratelimit.InvalidArgument("Lease", "must have a key and an ID")
	}
	if err := s.begin(ctx, "release"); err != nil {
		return false, err
	}
	n, err := releaseScript.Run(ctx, s.client, []string{s.leaseKey(l.Key)}, s.now(), l.ID).Int64()
	if err != nil {
		return false, storeError("release", err)
	}
	return n == 1, nil
}

// Held reports the live leases under key. See ratelimit.Acquirer.
func (s *Store) Held(ctx context.Context, key string) (int64, error) {
	if err := s.begin(ctx, "held"); err != nil {
		return 0, err
	}
	n, err := releaseScript.Run(ctx, s.client, []string{s.leaseKey(key)}, s.now(), "").Int64()
	if err != nil {
		return 0, storeError("held", err)
	}
	return n, nil
}

// ConsumeAtMost grants as much of the cost as every limit admits, in one
// script run. See ratelimit.PartialConsumer.
func (s *Store) ConsumeAtMost(ctx context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, int64, error) {
	if err := ratelimit.ValidateAtMost(reqs); err != nil {
		return ratelimit.Decision{}, 0, err
	}
	keys, err := s.keys(reqs)
	if err != nil {
		return ratelimit.Decision{}, 0, err
	}
	if err := s.begin(ctx, "consume at most"); err != nil {
		return ratelimit.Decision{}, 0, err
	}
	reply, err := atMostScript.Run(ctx, s.client, keys, s.oneDecision(reqs)...).Int64Slice()
	if err != nil {
		return ratelimit.Decision{}, 0, storeError("consume at most", err)
	}
	if len(reply) < 1 {
		return ratelimit.Decision{}, 0, storeError("consume at most", fmt.Errorf("malformed reply: empty"))
	}
	d, err := parseReply(reply[1:], keys, reqs)
	if err != nil {
		return ratelimit.Decision{}, 0, storeError("consume at most", err)
	}
	return d, reply[0], nil
}

// Reserve decides reqs, letting token buckets admit their cost up to
// maxWait later, in one script run. See ratelimit.Reserver.
func (s *Store) Reserve(ctx context.Context, maxWait time.Duration, reqs ...ratelimit.Request) (ratelimit.Reservation, error) {
	if err := ratelimit.ValidateRequests(reqs); err != nil {
		return ratelimit.Reservation{}, err
	}
	keys, err := s.keys(reqs)
	if err != nil {
		return ratelimit.Reservation{}, err
	}
	if err := s.begin(ctx, "reserve"); err != nil {
		return ratelimit.Reservation{}, err
	}
	args := append(s.oneDecision(reqs), max(maxWait, 0).Microseconds())
	reply, err := reserveScript.Run(ctx, s.client, keys, args...).Int64Slice()
	if err != nil {
		return ratelimit.Reservation{}, storeError("reserve", err)
	}
	if len(reply) < 1 || reply[0] < 0 {
		return ratelimit.Reservation{}, storeError("reserve", fmt.Errorf("malformed reply"))
	}
	d, err := parseReply(reply[1:], keys, reqs)
	if err != nil {
		return ratelimit.Reservation{}, storeError("reserve", err)
	}
	return ratelimit.Reservation{Decision: d, Delay: time.Duration(reply[0]) * time.Microsecond}, nil
}

// Refund gives back cost counted earlier, in one script run. See
// ratelimit.Reserver.
func (s *Store) Refund(ctx context.Context, reqs ...ratelimit.Request) error {
	if err := ratelimit.ValidateRequests(reqs); err != nil {
		return err
	}
	keys, err := s.keys(reqs)
	if err != nil {
		return err
	}
	if err := s.begin(ctx, "refund"); err != nil {
		return err
	}
	args := append([]any{s.now()}, requestArgs(reqs)...)
	if err := refundScript.Run(ctx, s.client, keys, args...).Err(); err != nil {
		return storeError("refund", err)
	}
	return nil
}

// Reset deletes key's counters for limits and its leases in one script
// run, so no decision sees half a reset. See ratelimit.Resetter.
func (s *Store) Reset(ctx context.Context, key string, limits ...ratelimit.Limit) (int, error) {
	if key == "" {
		return 0, ratelimit.InvalidArgument("key", "must not be empty")
	}
	keys := []string{s.leaseKey(key)}
	seen := map[string]bool{}
	for _, l := range limits {
		if k := string(s.prefix) + key + ":" + l.ID(); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	if err := s.begin(ctx, "reset"); err != nil {
		return 0, err
	}
	n, err := resetScript.Run(ctx, s.client, keys, s.now()).Int64()
	if err != nil {
		return 0, storeError("reset", err)
	}
	return int(n), nil
}
