// Package ratelimit decides whether a subject may perform an action now.
//
// The package has three layers. A Store (memlimit in process, redislimit on
// Redis) counts and decides atomically and knows nothing of business
// meaning. A Limiter, made by Define from a Definition, turns a typed input
// into keys, limits and cost, and applies the scene's failure mode. Scenes
// (one Definition per business scenario) are what the rest of a service
// calls.
//
// Pick the method by what the caller needs: Limiter.Allow for a yes/no that
// must never fail the request (store faults are answered by the failure
// mode), Limiter.Assert for an error to return as is, Limiter.Consume for the
// raw decision and store errors.
package ratelimit

import (
	"fmt"
	"strconv"
	"time"
)

// Algorithm selects how a Limit counts.
type Algorithm uint8

const (
	// FixedWindow counts cost in a window that starts at the first call it
	// counts and lasts the window length; the count resets when it ends,
	// and the next counted call starts a new one. So 1 per second never
	// admits two calls less than a second apart. It is the default and the
	// cheapest.
	FixedWindow Algorithm = iota
	// SlidingWindow estimates the cost of the last window length: the
	// current clock-aligned window's count plus the previous one's weighted
	// by how much of it still overlaps, rounded up.
	SlidingWindow
	// TokenBucket is GCRA: a smooth rate of Quota per Window with up to
	// Burst requests at once.
	TokenBucket
)

// String returns the algorithm's name as used in configuration files.
func (a Algorithm) String() string {
	switch a {
	case FixedWindow:
		return "fixed-window"
	case SlidingWindow:
		return "sliding-window"
	case TokenBucket:
		return "token-bucket"
	}
	return "algorithm(" + strconv.Itoa(int(a)) + ")"
}

// ParseAlgorithm returns the Algorithm named by s ("fixed-window",
// "sliding-window", "token-bucket"); "" means FixedWindow.
func ParseAlgorithm(s string) (Algorithm, error) {
	switch s {
	case "", "fixed-window":
		return FixedWindow, nil
	case "sliding-window":
		return SlidingWindow, nil
	case "token-bucket":
		return TokenBucket, nil
	}
	return 0, invalidArg("Algorithm", "must be fixed-window, sliding-window or token-bucket, got %q", s)
}

// Limit is Quota units of cost per Window.
type Limit struct {
	// Quota is how much cost the window admits. Must be positive.
	Quota int64
	// Window is the window length (any positive length, at least 1 ms).
	Window time.Duration
	// Algorithm is how the limit counts; the zero value is FixedWindow.
	Algorithm Algorithm
	// Burst is the token bucket's capacity; 0 means Quota. Ignored by the
	// window algorithms.
	Burst int64
}

// PerSecond returns a fixed-window limit of n per second.
func PerSecond(n int64) Limit { return Per(n, time.Second) }

// PerMinute returns a fixed-window limit of n per minute.
func PerMinute(n int64) Limit { return Per(n, time.Minute) }

// PerHour returns a fixed-window limit of n per hour.
func PerHour(n int64) Limit { return Per(n, time.Hour) }

// Per returns a fixed-window limit of n per window.
func Per(n int64, window time.Duration) Limit { return Limit{Quota: n, Window: window} }

// With returns a copy of l counted by algorithm a.
func (l Limit) With(a Algorithm) Limit { l.Algorithm = a; return l }

// WithBurst returns a token-bucket copy of l with capacity burst.
func (l Limit) WithBurst(burst int64) Limit { l.Algorithm = TokenBucket; l.Burst = burst; return l }

// Capacity is the most cost the limit admits at once: Burst (or Quota when
// Burst is 0) for a token bucket, Quota otherwise.
func (l Limit) Capacity() int64 {
	if l.Algorithm == TokenBucket && l.Burst > 0 {
		return l.Burst
	}
	return l.Quota
}

// Validate returns an ErrInvalidArgument error naming the field and the
// rule when l cannot be used.
func (l Limit) Validate() error {
	switch {
	case l.Quota <= 0:
		return invalidArg("Limit.Quota", "must be a positive integer, got %d", l.Quota)
	case l.Window < time.Millisecond:
		return invalidArg("Limit.Window", "must be at least 1ms, got %s", l.Window)
	case l.Window%time.Millisecond != 0:
		return invalidArg("Limit.Window", "must be a whole number of milliseconds, got %s", l.Window)
	case l.Algorithm > TokenBucket:
		return invalidArg("Limit.Algorithm", "unknown algorithm %d", l.Algorithm)
	case l.Burst < 0:
		return invalidArg("Limit.Burst", "must not be negative, got %d", l.Burst)
	}
	return nil
}

// ID names the counter a store keeps for this limit under a key: the
// algorithm and the window. Two limits with the same ID share a counter, so
// changing a quota keeps the count while changing a window starts afresh.
func (l Limit) ID() string {
	return string("fst"[l.Algorithm%3]) + strconv.FormatInt(l.Window.Milliseconds(), 10)
}

// String describes the limit, such as "10 per 1m0s (fixed-window)".
func (l Limit) String() string {
	s := fmt.Sprintf("%d per %s (%s)", l.Quota, l.Window, l.Algorithm)
	if l.Algorithm == TokenBucket && l.Burst > 0 {
		s += fmt.Sprintf(" burst %d", l.Burst)
	}
	return s
}
