package queue

import (
	"math/rand/v2"
	"time"
)

// DefaultBackoff is the retry delay after failed attempt n (from 1):
// exponential, 1s·2^(n−1) capped at one hour, with equal jitter (the delay
// is drawn from its upper half) so that jobs failing together do not all
// come back together.
func DefaultBackoff(attempt int, _ error) time.Duration {
	return ExponentialBackoff(time.Second, time.Hour)(attempt, nil)
}

// ExponentialBackoff returns a backoff of base·2^(n−1) capped at max, with
// equal jitter: the result is uniform in [d/2, d].
func ExponentialBackoff(base, max time.Duration) func(attempt int, err error) time.Duration {
	return func(attempt int, _ error) time.Duration {
		d := base
		for i := 1; i < attempt && d < max; i++ {
			d *= 2
		}
		d = min(d, max)
		if d <= 1 {
			return d
		}
		half := d / 2
		return half + rand.N(d-half+1)
	}
}
