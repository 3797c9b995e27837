package ratelimit

import (
	"sync"
	"time"
)

// faultLogEvery is how often a Limiter logs store faults at most. During an
// outage with the Redis breaker open a server answers tens of thousands of
// decisions a second by the failure mode; one line per decision would bury
// everything else in the log.
const faultLogEvery = 10 * time.Second

// faultLog lets through the first fault and then one per faultLogEvery,
// counting the faults it held back so the next line can say how many.
type faultLog struct {
	mu         sync.Mutex
	next       time.Time
	suppressed int64
}

// allow reports whether a fault seen at now is logged, and how many faults
// were held back since the last logged one.
func (f *faultLog) allow(now time.Time) (ok bool, suppressed int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.Before(f.next) {
		f.suppressed++
		return false, 0
	}
	f.next = now.Add(faultLogEvery)
	suppressed, f.suppressed = f.suppressed, 0
	return true, suppressed
}
