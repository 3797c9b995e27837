package pgqueue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// maxInsertBatch bounds the jobs of one shared INSERT; a call with more
// is written alone.
const maxInsertBatch = 1000

// maxInsertFlights bounds how many shared INSERTs are written at once;
// see maxCompleteFlights.
const maxInsertFlights = 2

// insertTimeout bounds one shared INSERT: it serves many callers, so it
// runs on its own context, not on any one caller's.
const insertTimeout = 30 * time.Second

// insertion is one Enqueue call waiting for its INSERT.
type insertion struct {
	ctx   context.Context
	specs []queue.JobSpec
	out   []queue.Enqueued // set before done is sent
	done  chan error
}

// inserter writes concurrent Enqueue calls (those without unique keys)
// together, as completer does for Complete: a call that comes while
// maxInsertFlights INSERTs are being written waits for the next one,
// which takes every call queued meanwhile, in one statement and one
// commit. A lone call is written at once. Each call returns once its own
// jobs have committed; their ids rise in the order the calls were taken,
// so a call that returned before another began has the smaller ids. When
// a shared INSERT fails, each of its calls is written again alone, so one
// call's bad input fails only that call.
type inserter struct {
	s       *Store
	mu      sync.Mutex
	queue   []*insertion
	running int            // writing goroutines
	wg      sync.WaitGroup // the writing goroutines
}

// enqueueShared stores specs, none unique, through the store's inserter.
func (s *Store) enqueueShared(ctx context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	in := &insertion{ctx: ctx, specs: specs, done: make(chan error, 1)}
	if !s.ins.add(in) {
		return nil, fmt.Errorf("pgqueue: enqueue: %w", queue.ErrClosed)
	}
	select {
	case err := <-in.done:
		return in.out, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// add queues in and starts a writer while fewer than maxInsertFlights
// run; it reports false, queuing nothing, once the store is closed.
func (ins *inserter) add(in *insertion) bool {
	ins.mu.Lock()
	defer ins.mu.Unlock()
	if ins.s.closed.Load() {
		return false
	}
	ins.queue = append(ins.queue, in)
	if ins.running < maxInsertFlights {
		ins.running++
		ins.wg.Add(1)
		go ins.loop()
	}
	return true
}

// close waits for the writers; the store is already marked closed, and
// taking the lock orders this after any add that did not see it.
func (ins *inserter) close() {
	ins.mu.Lock()
	//lint:ignore SA2001 an empty critical section, for the order above
	ins.mu.Unlock()
	ins.wg.Wait()
}

// loop writes batches until none is queued.
func (ins *inserter) loop() {
	defer ins.wg.Done()
	for {
		batch := ins.take()
		if batch == nil {
			return
		}
		ins.write(batch)
	}
}

// take removes the next batch: calls in arrival order up to
// maxInsertBatch jobs (at least one call). A call whose context has
// ended is answered at once and not written. It returns nil, counting
// the writer stopped, when nothing is queued.
func (ins *inserter) take() []*insertion {
	ins.mu.Lock()
	defer ins.mu.Unlock()
	var batch []*insertion
	n, i := 0, 0
	for ; i < len(ins.queue); i++ {
		in := ins.queue[i]
		if err := in.ctx.Err(); err != nil {
			in.done <- err
			continue
		}
		if len(batch) > 0 && n+len(in.specs) > maxInsertBatch {
			break
		}
		batch = append(batch, in)
		n += len(in.specs)
	}
	ins.queue = ins.queue[i:]
	if len(batch) == 0 {
		ins.running--
		return nil
	}
	return batch
}

// write inserts the jobs of batch in one statement and answers each
// call; when that fails, it writes each call alone.
func (ins *inserter) write(batch []*insertion) {
	ctx, cancel := context.WithTimeout(context.Background(), insertTimeout)
	defer cancel()
	var specs []queue.JobSpec
	for _, in := range batch {
		specs = append(specs, in.specs...)
	}
	out, err := ins.s.enqueueBatch(ctx, specs)
	if err != nil && len(batch) > 1 {
		for _, in := range batch {
			ins.write([]*insertion{in})
		}
		return
	}
	for _, in := range batch {
		if err == nil {
			in.out, out = out[:len(in.specs):len(in.specs)], out[len(in.specs):]
		}
		in.done <- err
	}
}
