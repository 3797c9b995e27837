package pgqueue

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var _ backend.EventLog = (*Store)(nil)

// logWake is the NOTIFY payload of the event log's triggers, and the key
// under which blocked readers subscribe: no queue has an empty name, so
// it never wakes a worker.
const logWake = ""

// logPoll is how often a blocked ReadEvents looks again without a
// notification, which may be lost while the listener reconnects. A
// variable only so a test can show that readers are woken by
// notifications and not by the poll.
var logPoll = time.Second

// registeredPoll is how soon a blocked ReadEvents looks again after it
// registered the store as a reader: a transaction whose trigger ran just
// before the registration committed sends no notification.
const registeredPoll = 50 * time.Millisecond

// busyPoll is how soon a blocked ReadEvents looks again when another
// reader was placing rows: that reader may end without placing the rows
// this one was woken for, and then sends no notification.
const busyPoll = 5 * time.Millisecond

// placeBatch bounds how many rows one read places.
const placeBatch = 10000

// The event log's statements.
const (
	// qPlaceEvents gives the committed rows not placed yet their places,
	// in write order, unless another reader is placing (the advisory
	// lock, held to the end of the read's implicit transaction), and
	// wakes the other readers when it placed any. A row placed meanwhile
	// by a placer whose commit this statement's snapshot missed is left
	// alone: the update re-checks pos on the row's latest version.
	qPlaceEvents = `WITH lock AS MATERIALIZED (SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS got),
		todo AS MATERIALIZED (SELECT e.ctid AS c FROM __schema__.event_log e, lock
			WHERE lock.got AND e.pos IS NULL ORDER BY e.id LIMIT $2),
		numbered AS MATERIALIZED (SELECT c, nextval($3::regclass) AS pos FROM todo),
		placed AS (UPDATE __schema__.event_log e SET pos = n.pos FROM numbered n
			WHERE e.ctid = n.c AND e.pos IS NULL RETURNING 1)
		SELECT (SELECT got FROM lock), CASE WHEN count(*) > 0 THEN pg_notify($4, '') END IS NULL FROM placed`
	qReadEvents = `SELECT pos, ` + sqlstore.LogColumns + ` FROM __schema__.event_log WHERE pos > $1 ORDER BY pos LIMIT $2`
	qEventsGap  = `SELECT pos > $1 FROM __schema__.event_log_pruned`
	qLastEvent  = `SELECT coalesce((SELECT max(pos) FROM __schema__.event_log WHERE pos IS NOT NULL),
		(SELECT pos FROM __schema__.event_log_pruned))`
	qPruneEvents = `WITH gone AS (
			DELETE FROM __schema__.event_log WHERE ctid IN (SELECT ctid FROM __schema__.event_log
				WHERE created_at <= $1 OR ($2 > 0 AND pos <= (SELECT pos FROM __schema__.event_log
					WHERE pos IS NOT NULL ORDER BY pos DESC OFFSET $2 LIMIT 1))
				ORDER BY pos NULLS LAST LIMIT $3 FOR UPDATE SKIP LOCKED)
			RETURNING pos),
		mark AS (UPDATE __schema__.event_log_pruned SET pos = (SELECT max(pos) FROM gone)
			WHERE pos < (SELECT max(pos) FROM gone))
		SELECT count(*) FROM gone`
	// qRegister registers the store as a blocked reader until $2 seconds
	// from now (the database's clock), so the triggers notify, and
	// forgets readers long gone.
	qRegister = `WITH gone AS (DELETE FROM __schema__.event_readers WHERE until < now() - interval '1 minute')
		INSERT INTO __schema__.event_readers (reader, until) VALUES ($1, now() + make_interval(secs => $2))
		ON CONFLICT (reader) DO UPDATE SET until = excluded.until`
	qNotifyReaders = `SELECT pg_notify($1, '') WHERE EXISTS
		(SELECT 1 FROM __schema__.event_readers WHERE until > now())`
	qLogEvent = `INSERT INTO __schema__.event_log (type, job_id, queue, kind, tenant, grp, state, attempt,
		error, data, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
)

// eventsOn returns ErrEventLogOff unless the store keeps the log, and
// ErrClosed once it is closed.
func (s *Store) eventsOn(op string) error {
	if !s.events {
		return s.wrap(op, queue.ErrEventLogOff)
	}
	return s.check(op)
}

// ReadEvents implements backend.EventLog. A blocked read waits for the
// NOTIFY the log's triggers send at commit (through the store's listener),
// looking again every logPoll in case one was lost.
func (s *Store) ReadEvents(ctx context.Context, after string, max int, block time.Duration) (backend.EventBatch, error) {
	from, err := sqlstore.ParseEventID(after)
	if err != nil {
		return backend.EventBatch{}, err
	}
	if max <= 0 {
		max = queue.DefaultListLimit
	}
	if err := s.eventsOn("read events"); err != nil {
		return backend.EventBatch{}, err
	}
	var wake <-chan struct{}
	registered := false
	if block > 0 {
		// Before the first read: a commit after it wakes this call.
		ch, stop := s.Subscribe([]string{logWake})
		defer stop()
		wake = ch
		if registered, err = s.reader.register(ctx, s, block); err != nil {
			return backend.EventBatch{}, s.wrap("read events", err)
		}
	}
	batch, busy, err := s.readEvents(ctx, from, after != "", max)
	if err != nil || len(batch.Events) > 0 || block <= 0 {
		return batch, err
	}
	deadline := time.NewTimer(block)
	defer deadline.Stop()
	for {
		pause := logPoll
		switch {
		case busy:
			pause = busyPoll
		case registered:
			pause, registered = registeredPoll, false
		}
		t := time.NewTimer(pause)
		expired := false
		select {
		case <-wake:
		case <-t.C:
		case <-deadline.C:
			expired = true
		case <-ctx.Done():
			t.Stop()
			return batch, s.wrap("read events", ctx.Err())
		case <-s.stop:
			t.Stop()
			return batch, s.wrap("read events", queue.ErrClosed)
		}
		t.Stop()
		batch, busy, err = s.readEvents(ctx, from, after != "", max)
		if err != nil || len(batch.Events) > 0 || expired {
			return batch, err
		}
	}
}

// readEvents places the committed rows not placed yet, then reads up to
// max events after from, in one round trip (one implicit transaction).
// With cursor set it also reads whether pruning passed from (Gap). busy
// reports that another reader held the placing lock.
func (s *Store) readEvents(ctx context.Context, from int64, cursor bool, max int) (batch backend.EventBatch, busy bool, err error) {
	var out backend.EventBatch
	b := &pgx.Batch{}
	b.Queue(qualify(qPlaceEvents, s.schema), "sluice.events."+s.schema, placeBatch,
		pgx.Identifier{s.schema, "event_log_pos"}.Sanitize(), s.q.channel)
	if cursor {
		b.Queue(qualify(qEventsGap, s.schema), from)
	}
	b.Queue(qualify(qReadEvents, s.schema), from, max)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	var placing, quiet bool
	if err := br.QueryRow().Scan(&placing, &quiet); err != nil {
		return out, false, s.wrap("read events", err)
	}
	if cursor {
		if err := br.QueryRow().Scan(&out.Gap); err != nil {
			return out, false, s.wrap("read events", err)
		}
	}
	out.Events, _, err = sqlstore.ReadLog(br.Query())
	return out, !placing, s.wrap("read events", err)
}

// LastEventID implements backend.EventLog: the newest placed event. A row
// committed before the call but not placed yet gets a later place, so it
// is read after this id: nothing is missed, and a reader may get such an
// event although it came a little before.
func (s *Store) LastEventID(ctx context.Context) (string, error) {
	if err := s.eventsOn("last event"); err != nil {
		return "", err
	}
	var pos int64
	if err := s.pool.QueryRow(ctx, qualify(qLastEvent, s.schema)).Scan(&pos); err != nil {
		return "", s.wrap("last event", err)
	}
	if pos == 0 {
		return "", nil
	}
	return strconv.FormatInt(pos, 10), nil
}

// PruneEvents implements backend.EventLog in one statement, which also
// records the newest place it deleted, so a reader behind it is told of
// the gap.
func (s *Store) PruneEvents(ctx context.Context, olderThan time.Duration, keep, limit int) (int, error) {
	if err := s.eventsOn("prune events"); err != nil {
		return 0, err
	}
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	var n int
	err := s.pool.QueryRow(ctx, qualify(qPruneEvents, s.schema), s.now()-int64(olderThan), max(keep, 0), limit).Scan(&n)
	return n, s.wrap("prune events", err)
}

// logEvent appends e to the event log inside the caller's transaction db
// when the log is on, and wakes the log's readers at commit; for events
// no trigger writes, such as progress reports.
func (s *Store) logEvent(ctx context.Context, db execer, e queue.Event, now int64) error {
	if !s.events {
		return nil
	}
	var data *string
	if len(e.Data) > 0 {
		d := string(e.Data)
		data = &d
	}
	if err := db.exec(ctx, qualify(qLogEvent, s.schema), string(e.Type), e.JobID, e.Queue, e.Kind, e.Tenant,
		e.Group, string(e.State), e.Attempt, e.Error, data, now); err != nil {
		return err
	}
	return db.exec(ctx, qualify(qNotifyReaders, s.schema), s.q.channel)
}

// readerReg is a store's registration as a blocked reader of the event
// log (the event_readers table), renewed when a read may outlast it.
type readerReg struct {
	mu    sync.Mutex
	id    string
	until time.Time // local clock; a margin before the database's
}

// readerMargin is how much longer than a read the registration lasts, so
// that back-to-back reads renew it seldom.
const readerMargin = 30 * time.Second

// register makes sure the store is registered for a read blocking up to
// block, and reports whether it had to register anew.
func (r *readerReg) register(ctx context.Context, s *Store, block time.Duration) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if now.Add(block).Before(r.until) {
		return false, nil
	}
	if r.id == "" {
		id, err := sqlstore.LeaseTokenPrefix()
		if err != nil {
			return false, err
		}
		r.id = id
	}
	d := block + 2*readerMargin
	if _, err := s.pool.Exec(ctx, qualify(qRegister, s.schema), r.id, d.Seconds()); err != nil {
		return false, err
	}
	r.until = now.Add(block + readerMargin)
	return true, nil
}
