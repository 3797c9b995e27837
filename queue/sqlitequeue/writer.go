package sqlitequeue

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/queue"
)

// maxGroup bounds how many write operations share one transaction.
const maxGroup = 128

// writeOp is one atomic operation waiting for the writer.
type writeOp struct {
	ctx  context.Context
	op   string
	fn   func(tx *wtx) error
	done chan error
}

// write runs fn as one atomic operation and returns its error.
//
// All writes go through one goroutine and one connection (SQLite has one
// writer). Operations that arrive while a transaction runs are grouped into
// the next transaction, each inside its own SAVEPOINT: an operation that
// fails is rolled back to its savepoint alone, the others commit together.
// Committing once for many operations is what makes concurrent workers
// fast; each operation stays all-or-nothing, and none is reported done
// before its transaction committed.
func (b *Backend) write(ctx context.Context, op string, fn func(tx *wtx) error) error {
	if err := ctx.Err(); err != nil {
		return b.wrap(op, err)
	}
	w := &writeOp{ctx: ctx, op: op, fn: fn, done: make(chan error, 1)}
	select {
	case b.ops <- w:
	case <-b.stop:
		return fmt.Errorf("sqlitequeue: %s: %w", op, queue.ErrClosed)
	}
	// Once handed over, wait for the outcome even if ctx ends: the
	// operation may already be committed and the caller must know.
	return b.wrap(op, <-w.done)
}

// writer runs grouped operations until the backend closes.
func (b *Backend) writer() {
	defer close(b.writerDone)
	for {
		var first *writeOp
		select {
		case first = <-b.ops:
		case <-b.stop:
			return
		}
		group := []*writeOp{first}
	fill:
		for len(group) < maxGroup {
			select {
			case w := <-b.ops:
				group = append(group, w)
			default:
				break fill
			}
		}
		b.runGroup(group)
	}
}

// runGroup runs ops in one transaction and reports each outcome.
func (b *Backend) runGroup(ops []*writeOp) {
	errs := make([]error, len(ops))
	ctx := context.Background()
	tx, err := b.w.BeginTx(ctx, nil)
	if err != nil {
		for _, w := range ops {
			w.done <- err
		}
		return
	}
	t := &wtx{ctx: ctx, tx: tx, s: b.ws}
	for i, w := range ops {
		if err := w.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		t.ctx = w.ctx
		var abort error
		errs[i], abort = runOne(t, w, len(ops) == 1)
		if abort != nil {
			// The transaction is in an unknown state: undo all of it.
			_ = tx.Rollback()
			for _, w := range ops {
				w.done <- abort
			}
			return
		}
	}
	if err := b.settleMoved(t); err != nil {
		_ = tx.Rollback()
		for _, w := range ops {
			w.done <- err
		}
		return
	}
	if err := tx.Commit(); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	b.committed() // wake event log readers (eventlog.go)
	for i, w := range ops {
		w.done <- errs[i]
	}
}

// runOne runs one operation inside a savepoint, so that its failure undoes
// only its own writes. Alone in its transaction it needs none: its failure
// aborts the transaction. abort reports that the transaction must be
// rolled back as a whole.
func runOne(t *wtx, w *writeOp, single bool) (err, abort error) {
	if single {
		if err := w.fn(t); err != nil {
			return err, err
		}
		return nil, nil
	}
	// The savepoint statements ignore the operation's cancellation: an
	// operation whose caller gave up half-way must undo its own writes,
	// not fail the whole group with it.
	sp := &wtx{ctx: context.WithoutCancel(w.ctx), tx: t.tx, s: t.s}
	if _, err := sp.exec(spSave); err != nil {
		return err, err
	}
	if err := w.fn(t); err != nil {
		if _, rerr := sp.exec(spRollback); rerr != nil {
			return err, fmt.Errorf("sqlitequeue: rollback to savepoint: %w", rerr)
		}
		if _, rerr := sp.exec(spRelease); rerr != nil {
			return err, rerr
		}
		return err, nil
	}
	if _, err := sp.exec(spRelease); err != nil {
		return err, err
	}
	return nil, nil
}

var (
	spSave     = hot(`SAVEPOINT op`)
	spRollback = hot(`ROLLBACK TO op`)
	spRelease  = hot(`RELEASE op`)
)
