package sqlitequeue

import (
	"context"
	"database/sql"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var _ backend.EventLog = (*Backend)(nil)

// eventTriggers write the event log in the same statement as the change
// each reports: a new job, a job starting or reaching a final state, a
// group finishing. They exist while the log is on (Options.Events); Open
// creates or drops them, so the file's log follows the last opener.
var eventTriggers = []string{
	`CREATE TRIGGER IF NOT EXISTS event_log_enqueued AFTER INSERT ON jobs BEGIN
		INSERT INTO event_log (type, job_id, queue, kind, tenant, grp, state, attempt, created_at)
		VALUES ('job.enqueued', CAST(new.id AS TEXT), new.queue, new.kind, new.tenant, new.grp,
			new.state, new.attempt, new.created_at);
	END`,
	`CREATE TRIGGER IF NOT EXISTS event_log_moved AFTER UPDATE OF state ON jobs
	WHEN new.state <> old.state AND new.state IN ('active', 'completed', 'failed', 'cancelled') BEGIN
		INSERT INTO event_log (type, job_id, queue, kind, tenant, grp, state, attempt, error, created_at)
		VALUES (CASE new.state WHEN 'active' THEN 'job.started' ELSE 'job.' || new.state END,
			CAST(new.id AS TEXT), new.queue, new.kind, new.tenant, new.grp, new.state, new.attempt,
			CASE WHEN new.state IN ('failed', 'cancelled') THEN new.last_error ELSE '' END, new.updated_at);
	END`,
	`CREATE TRIGGER IF NOT EXISTS event_log_group_done AFTER UPDATE OF done_at ON job_groups
	WHEN old.done_at = 0 AND new.done_at > 0 BEGIN
		INSERT INTO event_log (type, tenant, grp, created_at)
		VALUES ('group.completed', new.tenant, new.id, new.done_at);
	END`,
}

var eventTriggerNames = []string{"event_log_enqueued", "event_log_moved", "event_log_group_done"}

// setEventTriggers creates the log's triggers when on, drops them when off.
func setEventTriggers(ctx context.Context, db *sql.DB, on bool) error {
	for i, name := range eventTriggerNames {
		q := `DROP TRIGGER IF EXISTS ` + name
		if on {
			q = eventTriggers[i]
		}
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// logFeed wakes readers blocked in ReadEvents after a commit: the channel
// is closed and replaced on every commit while the log is on.
func (b *Backend) logFeed() <-chan struct{} {
	b.feedMu.Lock()
	defer b.feedMu.Unlock()
	return b.feed
}

// committed is called by the writer after each commit.
func (b *Backend) committed() {
	if !b.events {
		return
	}
	b.feedMu.Lock()
	close(b.feed)
	b.feed = make(chan struct{})
	b.feedMu.Unlock()
}

// crossProcessPoll bounds how long a blocked read waits without a commit
// of this process: writers in other processes sharing the file wake no
// one here.
const crossProcessPoll = time.Second

const qReadEvents = `SELECT seq, ` + sqlstore.LogColumns + ` FROM event_log WHERE seq > ? ORDER BY seq LIMIT ?`

// ReadEvents implements backend.EventLog. Event ids are the log's sequence
// numbers in decimal.
func (b *Backend) ReadEvents(ctx context.Context, after string, max int, block time.Duration) (backend.EventBatch, error) {
	from, err := sqlstore.ParseEventID(after)
	if err != nil {
		return backend.EventBatch{}, err
	}
	if max <= 0 {
		max = queue.DefaultListLimit
	}
	if !b.events {
		return backend.EventBatch{}, b.wrap("read events", queue.ErrEventLogOff)
	}
	feed := b.logFeed() // before the read: a commit after it wakes us
	batch, err := b.readEvents(ctx, from, max)
	if err != nil || len(batch.Events) > 0 || block <= 0 {
		return batch, err
	}
	t := time.NewTimer(min(block, crossProcessPoll))
	defer t.Stop()
	select {
	case <-feed:
	case <-t.C:
	case <-ctx.Done():
		return batch, b.wrap("read events", ctx.Err())
	}
	return b.readEvents(ctx, from, max)
}

func (b *Backend) readEvents(ctx context.Context, from int64, max int) (backend.EventBatch, error) {
	if b.closed.Load() {
		return backend.EventBatch{}, b.wrap("read events", queue.ErrClosed)
	}
	var out backend.EventBatch
	evs, first, err := sqlstore.ReadLog(sqlstore.OnSQL{Ctx: ctx, Q: b.r}.Query(qReadEvents, from, max))
	// Sequence numbers are dense but for pruning (AUTOINCREMENT, and a
	// rolled-back insert takes its number back): a first event past the
	// next number means the ones between were pruned.
	out.Events, out.Gap = evs, from > 0 && first > from+1
	return out, b.wrap("read events", err)
}

// LastEventID implements backend.EventLog: the last sequence number handed
// out, which pruning never lowers.
func (b *Backend) LastEventID(ctx context.Context) (string, error) {
	if !b.events {
		return "", b.wrap("last event", queue.ErrEventLogOff)
	}
	var seq sql.NullInt64
	err := b.r.QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = 'event_log'`).Scan(&seq)
	if err == sql.ErrNoRows || (err == nil && !seq.Valid) {
		return "", nil
	}
	if err != nil {
		return "", b.wrap("last event", err)
	}
	return strconv.FormatInt(seq.Int64, 10), nil
}

// PruneEvents implements backend.EventLog.
func (b *Backend) PruneEvents(ctx context.Context, olderThan time.Duration, keep, limit int) (int, error) {
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	cut := b.now() - int64(olderThan)
	n := 0
	err := b.write(ctx, "prune events", func(tx *wtx) error {
		res, err := tx.exec(`DELETE FROM event_log WHERE seq IN (SELECT seq FROM event_log
			WHERE created_at <= ?1 OR (?2 > 0 AND seq <= (SELECT max(seq) FROM event_log) - ?2)
			ORDER BY seq LIMIT ?3)`, cut, keep, limit)
		if err != nil {
			return err
		}
		m, err := res.RowsAffected()
		n = int(m)
		return err
	})
	return n, err
}
