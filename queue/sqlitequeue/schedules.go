package sqlitequeue

import (
	"context"
	"database/sql"
	"time"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

const scheduleCols = sqlstore.ScheduleColumns

var (
	qScheduleGet  = `SELECT ` + scheduleCols + ` FROM schedules WHERE name = ?`
	qScheduleList = `SELECT ` + scheduleCols + ` FROM schedules ORDER BY name`
	// A new schedule is anchored at now; a changed timing re-anchors it
	// and drops an unfinished claim.
	qSchedulePut = `INSERT INTO schedules (name, def, timing, source, last_tick, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5)
		ON CONFLICT (name) DO UPDATE SET def = excluded.def, source = excluded.source, updated_at = ?5,
			last_tick = CASE WHEN timing = excluded.timing THEN last_tick ELSE ?5 END,
			pending = CASE WHEN timing = excluded.timing THEN pending ELSE 0 END,
			timing = excluded.timing`
	qScheduleSource = `SELECT source FROM schedules WHERE name = ?`
	qScheduleDelete = `DELETE FROM schedules WHERE name = ?`
	qSchedulePause  = `UPDATE schedules SET paused = ?2, updated_at = ?3,
		last_tick = CASE WHEN paused = 1 AND ?2 = 0 THEN max(last_tick, ?3) ELSE last_tick END,
		pending = CASE WHEN paused = 1 AND ?2 = 0 THEN 0 ELSE pending END
		WHERE name = ?1`
	qScheduleClaim = `UPDATE schedules SET last_tick = ?3, pending = ?4, claimed_at = ?5
		WHERE name = ?1 AND last_tick = ?2 AND paused = 0 AND pending = 0`
	qScheduleRecordTick = `UPDATE schedules SET last_job = ?3, last_run_tick = ?2, last_run_at = ?4, pending = 0
		WHERE name = ?1 AND last_tick = ?2`
	qScheduleRecordManual = `UPDATE schedules SET last_job = ?2, last_run_tick = 0, last_run_at = ?3
		WHERE name = ?1`
)

// scheduleQ are the schedules' statements.
var scheduleQ = &sqlstore.ScheduleStatements{
	Get: qScheduleGet, List: qScheduleList, Put: qSchedulePut, Source: qScheduleSource, Delete: qScheduleDelete,
	Pause: qSchedulePause, Claim: qScheduleClaim, RecordTick: qScheduleRecordTick, RecordManual: qScheduleRecordManual,
}

// PutSchedule implements backend.ScheduleStore.
func (b *Backend) PutSchedule(ctx context.Context, rec backend.ScheduleRecord, keep string) (*backend.ScheduleRecord, error) {
	var out *backend.ScheduleRecord
	err := b.write(ctx, "put schedule", func(tx *wtx) error {
		var err error
		out, err = sqlstore.PutSchedule(tx, scheduleQ, rec, keep, b.now())
		return err
	})
	return out, err
}

// GetSchedule implements backend.ScheduleStore.
func (b *Backend) GetSchedule(ctx context.Context, name string) (*backend.ScheduleRecord, error) {
	var out *backend.ScheduleRecord
	err := b.read(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = sqlstore.GetSchedule(sqlstore.OnSQL{Ctx: ctx, Q: tx}, scheduleQ, name)
		return err
	})
	return out, b.wrap("get schedule", err)
}

// ListSchedules implements backend.ScheduleStore.
func (b *Backend) ListSchedules(ctx context.Context) ([]*backend.ScheduleRecord, error) {
	var out []*backend.ScheduleRecord
	err := b.read(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = sqlstore.ListSchedules(sqlstore.OnSQL{Ctx: ctx, Q: tx}, scheduleQ)
		return err
	})
	return out, b.wrap("list schedules", err)
}

// DeleteSchedule implements backend.ScheduleStore.
func (b *Backend) DeleteSchedule(ctx context.Context, name, source, keep string) error {
	return b.write(ctx, "delete schedule", func(tx *wtx) error {
		return sqlstore.DeleteSchedule(tx, scheduleQ, name, source, keep)
	})
}

// PauseSchedule implements backend.ScheduleStore.
func (b *Backend) PauseSchedule(ctx context.Context, name string, paused bool) (*backend.ScheduleRecord, error) {
	var out *backend.ScheduleRecord
	err := b.write(ctx, "pause schedule", func(tx *wtx) error {
		var err error
		out, err = sqlstore.PauseSchedule(tx, scheduleQ, name, paused, b.now())
		return err
	})
	return out, err
}

// ClaimTick implements backend.ScheduleStore.
func (b *Backend) ClaimTick(ctx context.Context, name string, prev, tick time.Time, run bool) (bool, error) {
	var ok bool
	err := b.write(ctx, "claim tick", func(tx *wtx) error {
		var err error
		ok, err = sqlstore.ClaimTick(tx, scheduleQ, name, prev, tick, run, b.now())
		return err
	})
	return ok, err
}

// RecordRun implements backend.ScheduleStore.
func (b *Backend) RecordRun(ctx context.Context, name string, tick time.Time, jobID string) error {
	return b.write(ctx, "record run", func(tx *wtx) error {
		return sqlstore.RecordRun(tx, scheduleQ, name, tick, jobID, b.now())
	})
}
