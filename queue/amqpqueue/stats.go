package amqpqueue

import (
	"context"
	"sort"

	"github.com/sluicehq/sluice/queue"
)

// Stats counts jobs per lane queue and state from what the broker and this
// process can see:
//
//   - pending: ready messages in the main queue, plus deliveries buffered
//     in this process (other processes' prefetched messages are invisible);
//   - scheduled: messages in the queue's delay queues (scheduled and
//     retrying jobs alike);
//   - active: jobs leased in this process;
//   - failed: messages in the dead-letter queue;
//   - completed, cancelled: jobs the Recorder keeps, when it implements
//     StateCounter.
//
// Queues appear once this process has declared or used them (or its
// recorder knows jobs of them), and only when they have jobs.
func (b *Backend) Stats(ctx context.Context) ([]queue.QueueStats, error) {
	if b.closed.Load() {
		return nil, queue.ErrClosed
	}
	counts := statCounts{}
	if sc, ok := b.rec.(StateCounter); ok {
		kept, err := sc.CountStates(ctx)
		if err != nil {
			return nil, err
		}
		for q, byState := range kept {
			counts.add(q, queue.StateCompleted, byState[queue.StateCompleted])
			counts.add(q, queue.StateCancelled, byState[queue.StateCancelled])
		}
	}
	for q, specs := range b.topo.queues() {
		for _, s := range specs {
			n, err := b.topo.inspect(ctx, s.name)
			if err != nil {
				return nil, err
			}
			counts.add(q, stateOfKind[s.kind], int64(n))
		}
	}
	b.localCounts(counts)
	out := make([]queue.QueueStats, 0, len(counts))
	for q, byState := range counts {
		out = append(out, queue.QueueStats{Queue: q, Counts: byState})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	if b.sched != nil {
		sched, err := b.sched.Stats(ctx)
		if err != nil {
			return nil, err
		}
		return mergeStats(out, sched), nil // scheduled.go
	}
	return out, nil
}

var stateOfKind = map[qkind]queue.State{
	kindMain: queue.StatePending, kindDelay: queue.StateScheduled, kindDead: queue.StateFailed,
}

// statCounts is queue → state → count, holding only non-zero counts.
type statCounts map[string]map[queue.State]int64

func (c statCounts) add(q string, s queue.State, n int64) {
	if n == 0 {
		return
	}
	if c[q] == nil {
		c[q] = map[queue.State]int64{}
	}
	c[q][s] += n
}

// localCounts adds this process's leases (active) and buffered deliveries
// (pending).
func (b *Backend) localCounts(c statCounts) {
	b.hmu.Lock()
	for _, h := range b.held {
		c.add(h.job.Queue, queue.StateActive, 1)
	}
	b.hmu.Unlock()
	b.cmu.Lock()
	defer b.cmu.Unlock()
	for q, cons := range b.consumers {
		c.add(q, queue.StatePending, int64(len(cons.buf)))
	}
}
