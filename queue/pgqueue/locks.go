package pgqueue

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// The scheduler's locks, and the one order that keeps them from forming a
// cycle (docs/postgres.md, "Lock order").
//
// Every advisory lock of a step (a tenant's, a group's, a unique key's)
// is an int64 key, and all of them are in one order, the keys' own. A
// step waits for an advisory lock only while it has taken nothing but
// advisory locks of smaller keys: no row lock, no statement that could
// have taken one. Any other advisory lock it needs it tries to take
// (pg_try_advisory_xact_lock), which never waits; when another
// transaction holds it, the step is rolled back and run again from the
// start, first waiting, in key order, for every key its first run took or
// wanted (schedTx). A transaction that waits for an advisory lock is
// therefore never waited for by one that waits for a smaller key or a
// row, and no cycle of waits can pass through an advisory lock.

// stepLocks are the advisory locks one step holds.
type stepLocks struct {
	db     dbq
	held   map[int64]bool
	top    int64 // the greatest key held
	fresh  bool  // nothing but advisory locks taken so far
	caller bool  // the caller's transaction: the step cannot be run again
	last   bool  // the step's last run (schedRuns)
	skip   []int64
}

// scopeBusy is the error of a step that needs an advisory lock another
// transaction holds and cannot wait for it (see stepLocks): schedTx runs
// the step again, waiting for keys first.
type scopeBusy struct{ keys []int64 }

func (e *scopeBusy) Error() string {
	return fmt.Sprintf("pgqueue: scheduler locks %v are held by another transaction", e.keys)
}

// mayWait reports whether the step may wait for key: it has taken only
// advisory locks, all of smaller keys.
func (l *stepLocks) mayWait(key int64) bool {
	return l.fresh && (len(l.held) == 0 || key > l.top)
}

// take takes key, waiting for it when mayWait allows (or in the caller's
// transaction, which cannot be run again), trying otherwise; ok is false
// when another transaction holds it.
func (l *stepLocks) take(ctx context.Context, key int64) (ok bool, err error) {
	if l.held[key] {
		return true, nil
	}
	if l.mayWait(key) || l.caller {
		err = l.db.exec(ctx, `SELECT pg_advisory_xact_lock($1)`, key)
		ok = err == nil
	} else {
		err = l.db.queryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, key).Scan(&ok)
	}
	if err != nil || !ok {
		return false, err
	}
	if l.held == nil {
		l.held = map[int64]bool{}
	}
	if len(l.held) == 0 || key > l.top {
		l.top = key
	}
	l.held[key] = true
	return true, nil
}

// keys returns the keys held, with extra, sorted, without repeats.
func (l *stepLocks) keys(extra ...int64) []int64 {
	out := append([]int64(nil), extra...)
	for k := range l.held {
		out = append(out, k)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// lockKey takes key for the step, or fails with *scopeBusy when another
// transaction holds it and the step may not wait for it.
func (sc *sched) lockKey(key int64) error {
	ok, err := sc.locks.take(sc.ctx, key)
	if err == nil && !ok {
		return &scopeBusy{keys: []int64{key}}
	}
	return err
}

// lockKeys takes keys in key order (see lockKey).
func (sc *sched) lockKeys(keys []int64) error {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	for _, k := range keys {
		if err := sc.lockKey(k); err != nil {
			return err
		}
	}
	return nil
}

// lock takes the step's lock on a scope (see lockKey); none for "".
func (sc *sched) lock(kind, name string) error {
	if name == "" {
		return nil
	}
	return sc.lockKey(sc.s.scopeKey(kind, name))
}

// tryScopes takes the locks of a tenant and a group, in key order, when
// it can do so without waiting, and reports whether it holds both. A key
// another transaction holds is noted (skipped) and not waited for: the
// step leaves what needs it alone.
func (sc *sched) tryScopes(tenant, grp string) (bool, error) {
	keys := sc.scopeKeys(nil, tenant, grp)
	slices.Sort(keys)
	for _, k := range keys {
		ok, err := sc.locks.take(sc.ctx, k)
		if err != nil {
			return false, err
		}
		if !ok {
			sc.locks.skip = append(sc.locks.skip, k)
			return false, nil
		}
	}
	return true, nil
}

// peek runs a query of one row that takes no row lock: it may come before
// the step's first locks without ending the time it may wait for them.
func (sc *sched) peek(query string, args ...any) scanner {
	return sc.locks.db.queryRow(sc.ctx, qualify(query, sc.s.schema), args...)
}

// peekRows is peek for a query of many rows.
func (sc *sched) peekRows(query string, args ...any) (rowsOf, error) {
	return sc.locks.db.query(sc.ctx, qualify(query, sc.s.schema), args...)
}

// stepDB is a step's connection to its transaction: the first statement
// through it ends the time the step may wait for advisory locks.
type stepDB struct {
	dbq
	locks *stepLocks
}

func (d stepDB) exec(ctx context.Context, query string, args ...any) error {
	d.locks.fresh = false
	return d.dbq.exec(ctx, query, args...)
}

func (d stepDB) execN(ctx context.Context, query string, args ...any) (int64, error) {
	d.locks.fresh = false
	return d.dbq.execN(ctx, query, args...)
}

func (d stepDB) queryRow(ctx context.Context, query string, args ...any) scanner {
	d.locks.fresh = false
	return d.dbq.queryRow(ctx, query, args...)
}

func (d stepDB) query(ctx context.Context, query string, args ...any) (rowsOf, error) {
	d.locks.fresh = false
	return d.dbq.query(ctx, query, args...)
}

// tx is the step's transaction, for a pgx batch; using it ends the time
// the step may wait for advisory locks.
func (sc *sched) tx() pgx.Tx {
	sc.locks.fresh = false
	return sc.locks.db.(pgxDB).q.(pgx.Tx)
}

// uniqueName is a unique key of a queue.
type uniqueName struct{ queue, key string }

// lockName is the text whose hash is the advisory lock key of a unique
// key (see lockUnique).
func (s *Store) lockName(u uniqueName) string {
	return s.schema + "\x1f" + strconv.Itoa(len(u.queue)) + ":" + u.queue + "\x1f" + u.key
}

// uniqueKeys returns the advisory lock keys of unique keys, read from the
// server (hashtextextended, which takes no lock) once per step.
func (sc *sched) uniqueKeys(us []uniqueName) ([]int64, error) {
	var miss []uniqueName
	var ask []string
	for _, u := range us {
		if _, ok := sc.unique[u]; !ok && !slices.Contains(miss, u) {
			miss, ask = append(miss, u), append(ask, sc.s.lockName(u))
		}
	}
	if len(ask) > 0 {
		got, err := sc.hashes(ask)
		if err != nil {
			return nil, err
		}
		if sc.unique == nil {
			sc.unique = map[uniqueName]int64{}
		}
		for i, u := range miss {
			sc.unique[u] = got[i]
		}
	}
	out := make([]int64, len(us))
	for i, u := range us {
		out[i] = sc.unique[u]
	}
	return out, nil
}

// hashes returns hashtextextended(name, 0) of each of names, in order.
func (sc *sched) hashes(names []string) ([]int64, error) {
	rows, err := sc.peekRows(`SELECT hashtextextended(n, 0) FROM unnest($1::text[]) WITH ORDINALITY AS u(n, i) ORDER BY i`, names)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	got := make([]int64, 0, len(names))
	for rows.Next() {
		var k int64
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		got = append(got, k)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(got) != len(names) {
		return nil, fmt.Errorf("pgqueue: %d lock keys for %d unique keys", len(got), len(names))
	}
	return got, nil
}

// lockSpecs takes, in key order, the locks of every scope and unique key
// of new jobs specs: a step that stores them takes them all before it
// writes anything.
func (sc *sched) lockSpecs(specs []queue.JobSpec) error {
	var keys []int64
	var us []uniqueName
	for _, sp := range specs {
		keys = sc.scopeKeys(keys, sp.Tenant, sp.Group)
		if sp.UniqueKey != "" {
			us = append(us, uniqueName{sp.Queue, sp.UniqueKey})
		}
	}
	if len(us) > 0 {
		uk, err := sc.uniqueKeys(us)
		if err != nil {
			return err
		}
		keys = append(keys, uk...)
	}
	return sc.lockKeys(keys)
}

// lockUnique takes the step's lock on a unique key of queue q and returns
// the job holding the key, or nil when it is free. The lock serializes
// the enqueues of one key across processes until their transactions end.
func (sc *sched) lockUnique(q, key string) (*queue.Job, error) {
	k, err := sc.uniqueKeys([]uniqueName{{q, key}})
	if err != nil {
		return nil, err
	}
	if err := sc.lockKey(k[0]); err != nil {
		return nil, err
	}
	j, err := sqlstore.ScanJob(sc.db.queryRow(sc.ctx, sc.s.q.findUnique, q, key, sc.now))
	if isNoRows(err) {
		return nil, nil
	}
	return j, err
}
