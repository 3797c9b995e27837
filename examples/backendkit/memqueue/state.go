package memqueue

import (
	"container/heap"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// The transitions below run with b.mu held. Every state change goes
// through setState, which keeps the counts Stats reads.

// setState moves e to s and keeps the per-queue counts.
func (b *Backend) setState(e *entry, s queue.State) {
	byState := b.counts[e.job.Queue]
	if byState == nil {
		byState = map[queue.State]int64{}
		b.counts[e.job.Queue] = byState
	}
	if e.job.State != "" {
		byState[e.job.State]--
	}
	byState[s]++
	e.job.State = s
}

// makePending makes e ready in its queue, behind jobs with a smaller
// sequence: a requeued job goes back to its place.
func (b *Backend) makePending(e *entry) {
	b.setState(e, queue.StatePending)
	h := b.ready[e.job.Queue]
	if h == nil {
		h = &byOrder{}
		b.ready[e.job.Queue] = h
	}
	heap.Push(h, ordered{e: e, seq: e.seq})
}

// schedule makes e wait until at, as s (scheduled or retrying).
func (b *Backend) schedule(e *entry, s queue.State, at time.Time) {
	b.setState(e, s)
	e.job.RunAt = at
	heap.Push(&b.due, ordered{e: e, key: at.UnixNano(), seq: e.seq})
}

// promoteDue makes every scheduled or retrying job due at now pending.
func (b *Backend) promoteDue(now time.Time) {
	for b.due.Len() > 0 && b.due[0].key <= now.UnixNano() {
		o := heap.Pop(&b.due).(ordered)
		waiting := o.e.job.State == queue.StateScheduled || o.e.job.State == queue.StateRetrying
		if waiting && o.e.job.RunAt.UnixNano() == o.key {
			b.makePending(o.e)
		}
	}
}

// nextReady takes the pending job of queues with the smallest sequence
// out of its heap, or returns nil.
func (b *Backend) nextReady(queues []string) *entry {
	var best *byOrder
	for _, q := range queues {
		h := b.ready[q]
		for h != nil && h.Len() > 0 && (*h)[0].e.job.State != queue.StatePending {
			heap.Pop(h) // cancelled while pending
		}
		if h != nil && h.Len() > 0 && (best == nil || (*h)[0].seq < (*best)[0].seq) {
			best = h
		}
	}
	if best == nil {
		return nil
	}
	return heap.Pop(best).(ordered).e
}

// held returns the job id while token holds its lease: ErrNotFound for an
// unknown job, ErrLeaseLost for any other token or state.
func (b *Backend) held(id, token string) (*entry, error) {
	e, ok := b.jobs[id]
	switch {
	case !ok:
		return nil, queue.ErrNotFound
	case e.job.State != queue.StateActive || token == "" || token != e.token:
		return nil, queue.ErrLeaseLost
	}
	return e, nil
}

// release clears e's lease, if it has one.
func (b *Backend) release(e *entry, now time.Time) {
	delete(b.active, e.job.ID)
	e.token = ""
	e.job.WorkerID, e.job.LeaseUntil, e.job.UpdatedAt = "", time.Time{}, now
}

// finish moves e to the final state s.
func (b *Backend) finish(e *entry, s queue.State, now time.Time) {
	b.release(e, now)
	b.setState(e, s)
	e.job.FinishedAt = now
}

// record adds a failed attempt's error to e's history.
func (e *entry) record(msg string, now time.Time) {
	e.job.LastError = msg
	e.job.Errors = append(e.job.Errors, queue.AttemptError{Attempt: e.job.Attempt, At: now, Error: msg})
	if n := len(e.job.Errors); n > queue.MaxErrorHistory {
		e.job.Errors = slices.Clone(e.job.Errors[n-queue.MaxErrorHistory:])
	}
}

// copy returns a copy of the job that shares nothing with the store.
func (e *entry) copy() *queue.Job {
	j := e.job
	j.Payload, j.Result, j.Errors = slices.Clone(j.Payload), slices.Clone(j.Result), slices.Clone(j.Errors)
	return &j
}

// newToken returns a fresh random lease token.
func newToken() string {
	var r [16]byte
	_, _ = rand.Read(r[:])
	return hex.EncodeToString(r[:])
}

func inQueues(q string, queues []string) bool {
	return len(queues) == 0 || slices.Contains(queues, q)
}

// later returns now + d, with d bounded at queue.MaxDuration (100 years),
// so that a duration near the largest one holds a job for as long as any
// store can, instead of overflowing into the past.
func later(now time.Time, d time.Duration) time.Time {
	return now.Add(min(d, queue.MaxDuration))
}

// orDefault returns v, or def when v is not positive.
func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// byOrder is a heap of entries by key, then sequence. An entry that has
// moved on since it was pushed (cancelled, or due at another time) is left
// in place and skipped when it comes out.
type byOrder []ordered

type ordered struct {
	e   *entry
	key int64 // RunAt in nanoseconds for due jobs; 0 for ready ones
	seq int64
}

func (h byOrder) Len() int { return len(h) }
func (h byOrder) Less(i, j int) bool {
	if h[i].key != h[j].key {
		return h[i].key < h[j].key
	}
	return h[i].seq < h[j].seq
}
func (h byOrder) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *byOrder) Push(x any)   { *h = append(*h, x.(ordered)) }
func (h *byOrder) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

var _ heap.Interface = (*byOrder)(nil)
