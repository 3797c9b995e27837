package pgqueue

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// maxCompleteBatch bounds how many completions one statement writes.
const maxCompleteBatch = 1000

// completeLinger bounds how long a batch waits for more completions
// while jobs this store leased are still running (see completer.linger).
const completeLinger = time.Millisecond

// maxCompleteFlights bounds how many batches are written at once. A
// second batch is sent while the first waits for its commit to be
// flushed, so the two share a WAL flush instead of the second waiting
// for the first's; more would cost a connection and a statement each for
// little more sharing.
const maxCompleteFlights = 2

// completeTimeout bounds one batch's write: the batch is shared by many
// callers, so it runs on its own context, not on any one caller's.
const completeTimeout = 30 * time.Second

// completion is one Complete call waiting for its batch.
type completion struct {
	id     int64
	token  string
	result []byte
	done   chan error
}

// completer writes concurrent Complete calls together: a call that comes
// while maxCompleteFlights batches are being written waits for the next
// batch, which takes every call queued meanwhile, in one statement and
// one commit. A lone call is written at once, so batching adds no
// latency; under load, one commit (one WAL flush) serves many jobs, which
// is where a busy worker's time goes. Each call still returns only once
// its own job's transition has committed, fenced by its own token.
type completer struct {
	s        *Store
	mu       sync.Mutex
	queue    []*completion
	inflight map[int64]bool // jobs of the batches being written
	running  int            // flushing goroutines
	wg       sync.WaitGroup // the flushing goroutines

	// held counts the leases this store handed out whose end (Complete,
	// Fail, Snooze, Requeue) has not been asked for yet: a hint of how
	// many completions may come soon, not an exact count (a lease that is
	// lost or rescued is never ended here).
	held atomic.Int64
	more chan struct{} // signalled by add, for linger
}

// Complete implements queue.Backend: fenced by the token, written in a
// batch with the other completions in flight (see completer).
func (s *Store) Complete(ctx context.Context, id, token string, result []byte) error {
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return err
	}
	if err := s.check("complete"); err != nil {
		return err
	}
	c := &completion{id: rid, token: lookupToken(token), result: result, done: make(chan error, 1)}
	s.done.held.Add(-1)
	s.done.add(c)
	select {
	case err := <-c.done:
		return s.wrap("complete", err)
	case <-ctx.Done():
		return s.wrap("complete", ctx.Err())
	}
}

// add queues c and starts a flusher while fewer than maxCompleteFlights
// run.
func (cp *completer) add(c *completion) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.queue = append(cp.queue, c)
	select {
	case cp.more <- struct{}{}:
	default:
	}
	if cp.running < maxCompleteFlights {
		cp.running++
		cp.wg.Add(1)
		go cp.flushLoop()
	}
}

// flushLoop writes batches until none can be taken.
func (cp *completer) flushLoop() {
	defer cp.wg.Done()
	var done []*completion
	for {
		cp.linger()
		batch := cp.take(done)
		if batch == nil {
			return
		}
		cp.flush(batch)
		done = batch
	}
}

// linger waits, at most completeLinger, while jobs this store leased may
// still complete and the queue is short of a full batch: jobs leased
// together tend to finish together, and a batch that waits a fraction of
// a WAL flush for them writes them in one commit instead of several, so
// their slots come free together and the worker leases them again in one
// call. The wait is real time, not the store's clock: it paces the
// database, not the jobs.
func (cp *completer) linger() {
	var t *time.Timer
	for cp.held.Load() > 0 {
		cp.mu.Lock()
		n := len(cp.queue)
		cp.mu.Unlock()
		if n == 0 || n >= maxCompleteBatch {
			return
		}
		if t == nil {
			t = time.NewTimer(completeLinger)
			defer t.Stop()
		}
		select {
		case <-cp.more:
		case <-t.C:
			return
		}
	}
}

// take marks the batch done written, then removes the next batch from
// the queue: at most maxCompleteBatch calls, one per job and none for a
// job in a batch being written (a second call for a job waits for the
// first's batch to end, so it sees its outcome as a sequential call
// would; the flusher of that batch takes it next). It returns nil, and
// counts the flusher stopped, when nothing can be taken.
func (cp *completer) take(done []*completion) []*completion {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	for _, c := range done {
		delete(cp.inflight, c.id)
	}
	if cp.inflight == nil {
		cp.inflight = map[int64]bool{}
	}
	var batch, rest []*completion
	for _, c := range cp.queue {
		if len(batch) < maxCompleteBatch && !cp.inflight[c.id] {
			cp.inflight[c.id] = true
			batch = append(batch, c)
		} else {
			rest = append(rest, c)
		}
	}
	cp.queue = rest
	if len(batch) == 0 {
		cp.running--
		return nil
	}
	return batch
}

// flush writes one batch and answers each call in it.
func (cp *completer) flush(batch []*completion) {
	s := cp.s
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	now := s.now()
	if len(batch) == 1 {
		c := batch[0]
		tag, err := s.pool.Exec(ctx, s.q.complete, c.result, now, c.id, c.token)
		if err == nil && tag.RowsAffected() == 0 {
			err = s.completeScoped(ctx, c.id, c.token, c.result)
		}
		c.done <- err
		return
	}
	ids, tokens, results := make([]int64, len(batch)), make([]string, len(batch)), make([][]byte, len(batch))
	for i, c := range batch {
		ids[i], tokens[i], results[i] = c.id, c.token, c.result
	}
	written, err := cp.writeMany(ctx, ids, tokens, results, now)
	for _, c := range batch {
		switch {
		case err != nil:
			c.done <- err
		case written[c.id]:
			c.done <- nil
		default: // lost its lease, or has a tenant or group
			c.done <- s.completeScoped(ctx, c.id, c.token, c.result)
		}
	}
}

// writeMany completes the jobs of one batch that need none of the
// scheduler's work, in one statement, and returns those it completed.
// It runs in one round trip after completeConfig, in one implicit
// transaction.
func (cp *completer) writeMany(ctx context.Context, ids []int64, tokens []string, results [][]byte, now int64) (map[int64]bool, error) {
	written := map[int64]bool{}
	err := cp.s.queryAfter(ctx, completeConfig, cp.s.q.completeMany, []any{ids, tokens, results, now}, func(rows pgx.Rows) error {
		var id int64
		_, err := pgx.ForEachRow(rows, []any{&id}, func() error {
			written[id] = true
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return written, nil
}

// completeConfig plans a batch of completions once per connection
// (genericPlansConfig), on the one plan left when sequential and bitmap
// scans, nested loops and merge joins are off: the batch's rows by id from
// the primary key, hashed against its tokens. Planned on each run, the
// batch spent more time in the planner than in its update (about 0.15 ms
// against 0.03 for five jobs), and a plan made once must not depend on
// what the table held then (TestCompleteManyReadsByID). JIT is off as in
// orderedReadsConfig: a disabled plan's cost would otherwise pass its
// thresholds.
const completeConfig = `SELECT ` + genericPlansConfig + `, set_config('enable_seqscan', 'off', true), ` +
	`set_config('enable_bitmapscan', 'off', true), set_config('enable_nestloop', 'off', true), ` +
	`set_config('enable_mergejoin', 'off', true), set_config('jit', 'off', true)`
