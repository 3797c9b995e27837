package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

const scheduleCols = `name, def, timing, source, paused, last_tick, pending, claimed_at,
	last_job, last_run_tick, last_run_at, created_at, updated_at`

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

func scanSchedule(r rowScanner) (*backend.ScheduleRecord, error) {
	var rec backend.ScheduleRecord
	var last, claimed, runTick, runAt, created, updated int64
	err := r.Scan(&rec.Name, &rec.Def, &rec.Timing, &rec.Source, &rec.Paused, &last, &rec.Pending,
		&claimed, &rec.LastJobID, &runTick, &runAt, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, queue.ErrScheduleNotFound
	}
	if err != nil {
		return nil, err
	}
	rec.LastTick, rec.ClaimedAt = fromNanos(last), fromNanos(claimed)
	rec.LastRunTick, rec.LastRunAt = fromNanos(runTick), fromNanos(runAt)
	rec.CreatedAt, rec.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &rec, nil
}

// owned refuses a change from source to a schedule kept by keep.
func owned(tx *wtx, name, source, keep string) error {
	if keep == "" || source == keep {
		return nil
	}
	var cur string
	err := tx.queryRow(qScheduleSource, name).Scan(&cur)
	if err == nil && cur == keep {
		return &queue.ScheduleOwnedError{Name: name, Source: cur}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}

// PutSchedule implements backend.ScheduleStore.
func (b *Backend) PutSchedule(ctx context.Context, rec backend.ScheduleRecord, keep string) (*backend.ScheduleRecord, error) {
	var out *backend.ScheduleRecord
	err := b.write(ctx, "put schedule", func(tx *wtx) error {
		if err := owned(tx, rec.Name, rec.Source, keep); err != nil {
			return err
		}
		if _, err := tx.exec(qSchedulePut, rec.Name, rec.Def, rec.Timing, rec.Source, b.now()); err != nil {
			return err
		}
		var err error
		out, err = scanSchedule(tx.queryRow(qScheduleGet, rec.Name))
		return err
	})
	return out, err
}

// GetSchedule implements backend.ScheduleStore.
func (b *Backend) GetSchedule(ctx context.Context, name string) (*backend.ScheduleRecord, error) {
	var out *backend.ScheduleRecord
	err := b.read(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = scanSchedule(tx.QueryRowContext(ctx, qScheduleGet, name))
		return err
	})
	return out, b.wrap("get schedule", err)
}

// ListSchedules implements backend.ScheduleStore.
func (b *Backend) ListSchedules(ctx context.Context) ([]*backend.ScheduleRecord, error) {
	var out []*backend.ScheduleRecord
	err := b.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, qScheduleList)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			rec, err := scanSchedule(rows)
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		return rows.Err()
	})
	return out, b.wrap("list schedules", err)
}

// DeleteSchedule implements backend.ScheduleStore.
func (b *Backend) DeleteSchedule(ctx context.Context, name, source, keep string) error {
	return b.write(ctx, "delete schedule", func(tx *wtx) error {
		if err := owned(tx, name, source, keep); err != nil {
			return err
		}
		return affected(tx.exec(qScheduleDelete, name))
	})
}

// affected turns an update of no row into ErrScheduleNotFound.
func affected(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return queue.ErrScheduleNotFound
	}
	return nil
}

// PauseSchedule implements backend.ScheduleStore.
func (b *Backend) PauseSchedule(ctx context.Context, name string, paused bool) (*backend.ScheduleRecord, error) {
	var out *backend.ScheduleRecord
	err := b.write(ctx, "pause schedule", func(tx *wtx) error {
		if err := affected(tx.exec(qSchedulePause, name, paused, b.now())); err != nil {
			return err
		}
		var err error
		out, err = scanSchedule(tx.queryRow(qScheduleGet, name))
		return err
	})
	return out, err
}

// ClaimTick implements backend.ScheduleStore.
func (b *Backend) ClaimTick(ctx context.Context, name string, prev, tick time.Time, run bool) (bool, error) {
	var ok bool
	err := b.write(ctx, "claim tick", func(tx *wtx) error {
		res, err := tx.exec(qScheduleClaim, name, toNanos(prev), toNanos(tick), run, b.now())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		ok = n == 1
		return err
	})
	return ok, err
}

// RecordRun implements backend.ScheduleStore.
func (b *Backend) RecordRun(ctx context.Context, name string, tick time.Time, jobID string) error {
	return b.write(ctx, "record run", func(tx *wtx) error {
		if tick.IsZero() {
			return affected(tx.exec(qScheduleRecordManual, name, jobID, b.now()))
		}
		if _, err := tx.exec(qScheduleRecordTick, name, toNanos(tick), jobID, b.now()); err != nil {
			return err
		}
		// A claim moved on meanwhile changes nothing; a deleted schedule
		// is reported.
		var src string
		err := tx.queryRow(qScheduleSource, name).Scan(&src)
		if errors.Is(err, sql.ErrNoRows) {
			return queue.ErrScheduleNotFound
		}
		return err
	})
}
