package sqlstore

import (
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// ScheduleColumns lists the columns of a schedule that scanSchedule
// reads, in order.
const ScheduleColumns = `name, def, timing, source, paused, last_tick, pending, claimed_at,
	last_job, last_run_tick, last_run_at, created_at, updated_at`

// ScheduleStatements are a dialect's statements of the schedules
// (backend.ScheduleStore). $n names the n-th argument.
type ScheduleStatements struct {
	// Get returns ScheduleColumns of schedule $1; List of every schedule
	// by name.
	Get, List string
	// Put inserts or updates schedule $1 (def $2, timing $3, source $4,
	// now $5): a new one is anchored at now; a changed timing re-anchors
	// it and drops an unfinished claim.
	Put string
	// Source returns schedule $1's source, locking its row where the
	// dialect locks rows.
	Source string
	// Delete deletes schedule $1.
	Delete string
	// Pause sets schedule $1 paused ($2) at $3; a resumed schedule skips
	// the ticks it missed.
	Pause string
	// Claim moves schedule $1's last tick from $2 to $3 and its pending
	// mark to $4 at $5, unless it moved on, is paused or is pending.
	Claim string
	// RecordTick records job $3 run at $4 for tick $2 of schedule $1,
	// unless its claim moved on; RecordManual records job $2 run at $3
	// out of turn.
	RecordTick, RecordManual string
	// Returning says Put and Pause return the schedule's row and
	// RecordTick the count of schedules named $1; otherwise they return
	// nothing, and a query of Get or Source follows them.
	Returning bool
	// Timing is the argument of a timing, as the dialect stores it; nil
	// passes the string.
	Timing func(string) any
}

// scanSchedule reads a row of ScheduleColumns; no row is
// ErrScheduleNotFound.
func scanSchedule(r Row) (*backend.ScheduleRecord, error) {
	var rec backend.ScheduleRecord
	var last, claimed, runTick, runAt, created, updated int64
	var timing []byte
	err := r.Scan(&rec.Name, &rec.Def, &timing, &rec.Source, &rec.Paused, &last, &rec.Pending,
		&claimed, &rec.LastJobID, &runTick, &runAt, &created, &updated)
	if IsNoRows(err) {
		return nil, queue.ErrScheduleNotFound
	}
	if err != nil {
		return nil, err
	}
	if rec.Def == nil {
		rec.Def = []byte{}
	}
	rec.Timing = string(timing)
	rec.LastTick, rec.ClaimedAt = FromNanos(last), FromNanos(claimed)
	rec.LastRunTick, rec.LastRunAt = FromNanos(runTick), FromNanos(runAt)
	rec.CreatedAt, rec.UpdatedAt = FromNanos(created), FromNanos(updated)
	return &rec, nil
}

// scheduleFound turns a change of no row into ErrScheduleNotFound.
func scheduleFound(n int64, err error) error {
	if err == nil && n == 0 {
		return queue.ErrScheduleNotFound
	}
	return err
}

// scheduleOwned refuses a change from source to a schedule kept by keep,
// holding the schedule's row lock, where the dialect locks rows, for the
// rest of tx.
func scheduleOwned(tx Tx, st *ScheduleStatements, name, source, keep string) error {
	if keep == "" || source == keep {
		return nil
	}
	var cur string
	err := tx.QueryRow(st.Source, name).Scan(&cur)
	if err == nil && cur == keep {
		return &queue.ScheduleOwnedError{Name: name, Source: cur}
	}
	if IsNoRows(err) {
		return nil
	}
	return err
}

// PutSchedule stores rec unless keep keeps it (backend.ScheduleStore); tx
// is one transaction.
func PutSchedule(tx Tx, st *ScheduleStatements, rec backend.ScheduleRecord, keep string, now int64) (*backend.ScheduleRecord, error) {
	if err := scheduleOwned(tx, st, rec.Name, rec.Source, keep); err != nil {
		return nil, err
	}
	def := rec.Def
	if def == nil {
		def = []byte{}
	}
	var timing any = rec.Timing
	if st.Timing != nil {
		timing = st.Timing(rec.Timing)
	}
	args := []any{rec.Name, def, timing, rec.Source, now}
	if st.Returning {
		return scanSchedule(tx.QueryRow(st.Put, args...))
	}
	if _, err := tx.Exec(st.Put, args...); err != nil {
		return nil, err
	}
	return GetSchedule(tx, st, rec.Name)
}

// GetSchedule reads schedule name.
func GetSchedule(tx Tx, st *ScheduleStatements, name string) (*backend.ScheduleRecord, error) {
	return scanSchedule(tx.QueryRow(st.Get, name))
}

// ListSchedules reads every schedule, by name.
func ListSchedules(tx Tx, st *ScheduleStatements) ([]*backend.ScheduleRecord, error) {
	rows, err := tx.Query(st.List)
	return CollectRows(rows, err, scanSchedule)
}

// DeleteSchedule deletes schedule name unless keep keeps it; tx is one
// transaction.
func DeleteSchedule(tx Tx, st *ScheduleStatements, name, source, keep string) error {
	if err := scheduleOwned(tx, st, name, source, keep); err != nil {
		return err
	}
	return scheduleFound(tx.Exec(st.Delete, name))
}

// PauseSchedule pauses or resumes schedule name.
func PauseSchedule(tx Tx, st *ScheduleStatements, name string, paused bool, now int64) (*backend.ScheduleRecord, error) {
	if st.Returning {
		return scanSchedule(tx.QueryRow(st.Pause, name, paused, now))
	}
	if err := scheduleFound(tx.Exec(st.Pause, name, paused, now)); err != nil {
		return nil, err
	}
	return GetSchedule(tx, st, name)
}

// ClaimTick claims tick of schedule name, the one after prev, in one
// compare-and-set: of schedulers racing for a tick, one wins.
func ClaimTick(tx Tx, st *ScheduleStatements, name string, prev, tick time.Time, run bool, now int64) (bool, error) {
	n, err := tx.Exec(st.Claim, name, ToNanos(prev), ToNanos(tick), run, now)
	return n == 1, err
}

// RecordRun records job jobID run for tick of schedule name (the zero
// tick: run out of turn). A claim moved on meanwhile changes nothing; a
// deleted schedule is ErrScheduleNotFound.
func RecordRun(tx Tx, st *ScheduleStatements, name string, tick time.Time, jobID string, now int64) error {
	if tick.IsZero() {
		return scheduleFound(tx.Exec(st.RecordManual, name, jobID, now))
	}
	if st.Returning {
		var n int64
		err := tx.QueryRow(st.RecordTick, name, ToNanos(tick), jobID, now).Scan(&n)
		return scheduleFound(n, err)
	}
	if _, err := tx.Exec(st.RecordTick, name, ToNanos(tick), jobID, now); err != nil {
		return err
	}
	var src string
	err := tx.QueryRow(st.Source, name).Scan(&src)
	if IsNoRows(err) {
		return queue.ErrScheduleNotFound
	}
	return err
}
