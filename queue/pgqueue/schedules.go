package pgqueue

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.ScheduleStore = (*Store)(nil)

const scheduleCols = `name, def, timing, source, paused, last_tick, pending, claimed_at,
	last_job, last_run_tick, last_run_at, created_at, updated_at`

// The schedules' statements. Each change is one statement, or a
// transaction that first locks the schedule's row (FOR UPDATE), so two
// stores changing one schedule take turns.
const (
	qScheduleGet  = `SELECT ` + scheduleCols + ` FROM __schema__.schedules WHERE name = $1`
	qScheduleList = `SELECT ` + scheduleCols + ` FROM __schema__.schedules ORDER BY name`
	// A new schedule is anchored at now; a changed timing re-anchors it
	// and drops an unfinished claim.
	qSchedulePut = `INSERT INTO __schema__.schedules AS s (name, def, timing, source, last_tick, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5, $5)
		ON CONFLICT (name) DO UPDATE SET def = excluded.def, source = excluded.source, updated_at = $5,
			last_tick = CASE WHEN s.timing = excluded.timing THEN s.last_tick ELSE $5 END,
			pending = CASE WHEN s.timing = excluded.timing THEN s.pending ELSE false END,
			timing = excluded.timing
		RETURNING ` + scheduleCols
	qScheduleSource = `SELECT source FROM __schema__.schedules WHERE name = $1 FOR UPDATE`
	qScheduleDelete = `DELETE FROM __schema__.schedules WHERE name = $1`
	qSchedulePause  = `UPDATE __schema__.schedules SET paused = $2, updated_at = $3,
		last_tick = CASE WHEN paused AND NOT $2 THEN greatest(last_tick, $3) ELSE last_tick END,
		pending = CASE WHEN paused AND NOT $2 THEN false ELSE pending END
		WHERE name = $1 RETURNING ` + scheduleCols
	qScheduleClaim = `UPDATE __schema__.schedules SET last_tick = $3, pending = $4, claimed_at = $5
		WHERE name = $1 AND last_tick = $2 AND NOT paused AND NOT pending`
	qScheduleRecordTick = `WITH s AS (SELECT name FROM __schema__.schedules WHERE name = $1),
		u AS (UPDATE __schema__.schedules SET last_job = $3, last_run_tick = $2, last_run_at = $4, pending = false
			WHERE name = $1 AND last_tick = $2)
		SELECT count(*) FROM s`
	qScheduleRecordManual = `UPDATE __schema__.schedules SET last_job = $2, last_run_tick = 0, last_run_at = $3
		WHERE name = $1`
)

func scanSchedule(r scanner) (*backend.ScheduleRecord, error) {
	var rec backend.ScheduleRecord
	var last, claimed, runTick, runAt, created, updated int64
	var timing []byte
	err := r.Scan(&rec.Name, &rec.Def, &timing, &rec.Source, &rec.Paused, &last, &rec.Pending,
		&claimed, &rec.LastJobID, &runTick, &runAt, &created, &updated)
	if isNoRows(err) {
		return nil, queue.ErrScheduleNotFound
	}
	if err != nil {
		return nil, err
	}
	if rec.Def == nil {
		rec.Def = []byte{}
	}
	rec.Timing = string(timing)
	rec.LastTick, rec.ClaimedAt = fromNanos(last), fromNanos(claimed)
	rec.LastRunTick, rec.LastRunAt = fromNanos(runTick), fromNanos(runAt)
	rec.CreatedAt, rec.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &rec, nil
}

// owned refuses a change from source to a schedule kept by keep, holding
// the schedule's row lock for the rest of tx.
func (s *Store) owned(ctx context.Context, tx pgx.Tx, name, source, keep string) error {
	if keep == "" || source == keep {
		return nil
	}
	var cur string
	err := tx.QueryRow(ctx, qualify(qScheduleSource, s.schema), name).Scan(&cur)
	if err == nil && cur == keep {
		return &queue.ScheduleOwnedError{Name: name, Source: cur}
	}
	if isNoRows(err) {
		return nil
	}
	return err
}

// PutSchedule implements backend.ScheduleStore.
func (s *Store) PutSchedule(ctx context.Context, rec backend.ScheduleRecord, keep string) (*backend.ScheduleRecord, error) {
	var out *backend.ScheduleRecord
	def := rec.Def
	if def == nil {
		def = []byte{}
	}
	err := s.tx(ctx, "put schedule", func(tx pgx.Tx) error {
		if err := s.owned(ctx, tx, rec.Name, rec.Source, keep); err != nil {
			return err
		}
		var err error
		out, err = scanSchedule(tx.QueryRow(ctx, qualify(qSchedulePut, s.schema), rec.Name, def, []byte(rec.Timing), rec.Source, s.now()))
		return err
	})
	return out, err
}

// GetSchedule implements backend.ScheduleStore.
func (s *Store) GetSchedule(ctx context.Context, name string) (*backend.ScheduleRecord, error) {
	if err := s.check("get schedule"); err != nil {
		return nil, err
	}
	if !queue.Storable(name) {
		return nil, queue.ErrScheduleNotFound // never stored: see text.go
	}
	out, err := scanSchedule(s.pool.QueryRow(ctx, qualify(qScheduleGet, s.schema), name))
	return out, s.wrap("get schedule", err)
}

// ListSchedules implements backend.ScheduleStore.
func (s *Store) ListSchedules(ctx context.Context) ([]*backend.ScheduleRecord, error) {
	if err := s.check("list schedules"); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, qualify(qScheduleList, s.schema))
	if err != nil {
		return nil, s.wrap("list schedules", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*backend.ScheduleRecord, error) { return scanSchedule(r) })
	return out, s.wrap("list schedules", err)
}

// DeleteSchedule implements backend.ScheduleStore.
func (s *Store) DeleteSchedule(ctx context.Context, name, source, keep string) error {
	return s.tx(ctx, "delete schedule", func(tx pgx.Tx) error {
		if err := s.owned(ctx, tx, name, source, keep); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, qualify(qScheduleDelete, s.schema), name)
		return found(tag.RowsAffected(), err)
	})
}

// found turns a change of no row into ErrScheduleNotFound.
func found(n int64, err error) error {
	if err == nil && n == 0 {
		return queue.ErrScheduleNotFound
	}
	return err
}

// PauseSchedule implements backend.ScheduleStore.
func (s *Store) PauseSchedule(ctx context.Context, name string, paused bool) (*backend.ScheduleRecord, error) {
	if err := s.check("pause schedule"); err != nil {
		return nil, err
	}
	out, err := scanSchedule(s.pool.QueryRow(ctx, qualify(qSchedulePause, s.schema), name, paused, s.now()))
	return out, s.wrap("pause schedule", err)
}

// ClaimTick implements backend.ScheduleStore: one compare-and-set UPDATE;
// of schedulers racing for a tick, the first to commit wins and the others
// find last_tick moved when they re-check the row after its lock.
func (s *Store) ClaimTick(ctx context.Context, name string, prev, tick time.Time, run bool) (bool, error) {
	if err := s.check("claim tick"); err != nil {
		return false, err
	}
	n, err := s.execN(ctx, qualify(qScheduleClaim, s.schema), name, toNanos(prev), toNanos(tick), run, s.now())
	return n == 1, s.wrap("claim tick", err)
}

// RecordRun implements backend.ScheduleStore.
func (s *Store) RecordRun(ctx context.Context, name string, tick time.Time, jobID string) error {
	if err := s.check("record run"); err != nil {
		return err
	}
	if tick.IsZero() {
		n, err := s.execN(ctx, qualify(qScheduleRecordManual, s.schema), name, jobID, s.now())
		return s.wrap("record run", found(n, err))
	}
	// A claim moved on meanwhile changes nothing; a deleted schedule is
	// reported.
	var n int64
	err := s.pool.QueryRow(ctx, qualify(qScheduleRecordTick, s.schema), name, toNanos(tick), jobID, s.now()).Scan(&n)
	return s.wrap("record run", found(n, err))
}
