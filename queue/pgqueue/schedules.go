package pgqueue

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var _ backend.ScheduleStore = (*Store)(nil)

const scheduleCols = sqlstore.ScheduleColumns

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

// scheduleStatements are the schedules' statements on schema.
func scheduleStatements(schema string) *sqlstore.ScheduleStatements {
	q := func(text string) string { return qualify(text, schema) }
	return &sqlstore.ScheduleStatements{
		Get: q(qScheduleGet), List: q(qScheduleList), Put: q(qSchedulePut), Source: q(qScheduleSource),
		Delete: q(qScheduleDelete), Pause: q(qSchedulePause), Claim: q(qScheduleClaim),
		RecordTick: q(qScheduleRecordTick), RecordManual: q(qScheduleRecordManual), Returning: true,
		Timing: func(t string) any { return []byte(t) }, // bytea: a timing may hold NUL bytes
	}
}

// PutSchedule implements backend.ScheduleStore.
func (s *Store) PutSchedule(ctx context.Context, rec backend.ScheduleRecord, keep string) (*backend.ScheduleRecord, error) {
	var out *backend.ScheduleRecord
	err := s.tx(ctx, "put schedule", func(tx pgx.Tx) error {
		var err error
		out, err = sqlstore.PutSchedule(onPgx{ctx, tx}, s.sq, rec, keep, s.now())
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
	out, err := sqlstore.GetSchedule(onPgx{ctx, s.pool}, s.sq, name)
	return out, s.wrap("get schedule", err)
}

// ListSchedules implements backend.ScheduleStore.
func (s *Store) ListSchedules(ctx context.Context) ([]*backend.ScheduleRecord, error) {
	if err := s.check("list schedules"); err != nil {
		return nil, err
	}
	out, err := sqlstore.ListSchedules(onPgx{ctx, s.pool}, s.sq)
	return out, s.wrap("list schedules", err)
}

// DeleteSchedule implements backend.ScheduleStore.
func (s *Store) DeleteSchedule(ctx context.Context, name, source, keep string) error {
	return s.tx(ctx, "delete schedule", func(tx pgx.Tx) error {
		return sqlstore.DeleteSchedule(onPgx{ctx, tx}, s.sq, name, source, keep)
	})
}

// PauseSchedule implements backend.ScheduleStore.
func (s *Store) PauseSchedule(ctx context.Context, name string, paused bool) (*backend.ScheduleRecord, error) {
	if err := s.check("pause schedule"); err != nil {
		return nil, err
	}
	out, err := sqlstore.PauseSchedule(onPgx{ctx, s.pool}, s.sq, name, paused, s.now())
	return out, s.wrap("pause schedule", err)
}

// ClaimTick implements backend.ScheduleStore: one compare-and-set UPDATE;
// of schedulers racing for a tick, the first to commit wins and the others
// find last_tick moved when they re-check the row after its lock.
func (s *Store) ClaimTick(ctx context.Context, name string, prev, tick time.Time, run bool) (bool, error) {
	if err := s.check("claim tick"); err != nil {
		return false, err
	}
	ok, err := sqlstore.ClaimTick(onPgx{ctx, s.pool}, s.sq, name, prev, tick, run, s.now())
	return ok, s.wrap("claim tick", err)
}

// RecordRun implements backend.ScheduleStore.
func (s *Store) RecordRun(ctx context.Context, name string, tick time.Time, jobID string) error {
	if err := s.check("record run"); err != nil {
		return err
	}
	return s.wrap("record run", sqlstore.RecordRun(onPgx{ctx, s.pool}, s.sq, name, tick, jobID, s.now()))
}
