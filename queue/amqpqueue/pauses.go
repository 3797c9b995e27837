package amqpqueue

import (
	"context"
	"slices"
	"sync"
	"time"
)

// pauseRefresh is how often, at most, the lane reads the pauses of its
// queues from the Scheduler (real time): a pause made through another
// process holds this one's broker jobs within about that long.
const pauseRefresh = time.Second

// queuePauses are the pauses of lane queues in force, which keep the
// lane from consuming a paused queue from the broker (the Scheduler holds
// its own jobs itself). A pause made through this process is known at
// once; the others are read from the Scheduler's Stats.
type queuePauses struct {
	mu    sync.Mutex
	until map[string]time.Time // by queue; on the lane's Clock
	read  time.Time            // real time of the last read
}

func (p *queuePauses) set(q string, end time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until == nil {
		p.until = map[string]time.Time{}
	}
	p.until[q] = end
}

// unpaused returns the queues that are not paused now, reading the
// pauses again first when the last read is older than pauseRefresh. A
// failed read keeps the pauses known.
func (p *queuePauses) unpaused(ctx context.Context, b *Backend, queues []string) []string {
	p.mu.Lock()
	stale := time.Since(p.read) >= pauseRefresh
	if stale {
		p.read = time.Now()
	}
	p.mu.Unlock()
	if stale {
		if stats, err := b.sched.Stats(ctx); err == nil {
			fresh := map[string]time.Time{}
			for _, s := range stats {
				if !s.PausedUntil.IsZero() {
					fresh[s.Queue] = s.PausedUntil
				}
			}
			p.mu.Lock()
			p.until = fresh
			p.mu.Unlock()
		}
	}
	now := b.clk.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(queues), func(q string) bool { return p.until[q].After(now) })
}
