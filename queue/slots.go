package queue

import (
	"slices"
	"sync"
)

// slotQueue hands a worker's handler slots to its prefetched jobs in the
// order they were leased, which is the store's order (priority, then
// enqueue order): a job leased first starts first.
type slotQueue struct {
	mu   sync.Mutex
	free int
	wait []chan struct{}
}

func newSlotQueue(n int) *slotQueue { return &slotQueue{free: n} }

// enter queues for a slot; the returned channel receives once it is
// granted. Calls must be made in lease order.
func (q *slotQueue) enter() chan struct{} {
	ch := make(chan struct{}, 1)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.free > 0 && len(q.wait) == 0 {
		q.free--
		ch <- struct{}{}
	} else {
		q.wait = append(q.wait, ch)
	}
	return ch
}

// release frees a granted slot: the longest waiter gets it.
func (q *slotQueue) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.wait) > 0 {
		ch := q.wait[0]
		q.wait = q.wait[1:]
		ch <- struct{}{}
		return
	}
	q.free++
}

// leave withdraws a waiter that will not run; a slot granted to it
// meanwhile passes on.
func (q *slotQueue) leave(ch chan struct{}) {
	q.mu.Lock()
	if i := slices.Index(q.wait, ch); i >= 0 {
		q.wait = slices.Delete(q.wait, i, i+1)
		q.mu.Unlock()
		return
	}
	q.mu.Unlock()
	<-ch
	q.release()
}
