package backend

import (
	"context"
	"time"
)

// ScheduleStore keeps schedules and claims their ticks (Features.Schedules,
// CapSchedules). It stores what package queue gives it and knows no cron:
// the definition is opaque bytes, and the ticks are computed by the
// Scheduler. Each method is one atomic store operation. Package queuetest
// checks an implementation (RunSchedules).
type ScheduleStore interface {
	// PutSchedule stores rec by rec.Name, creating or replacing the
	// definition (Def, Timing, Source). A new record starts with
	// LastTick = the store's now (its anchor), not paused. An existing one
	// keeps its state (paused, last tick, last run), except that when its
	// Timing differs from rec.Timing its LastTick becomes now and an
	// unfinished claim is dropped. When keep is not empty and the
	// stored record's Source is keep while rec.Source is not, nothing
	// changes and the error is a *ScheduleOwnedError. CreatedAt and
	// UpdatedAt are the store's now. It returns the record as stored.
	PutSchedule(ctx context.Context, rec ScheduleRecord, keep string) (*ScheduleRecord, error)
	// GetSchedule returns the record, or ErrScheduleNotFound.
	GetSchedule(ctx context.Context, name string) (*ScheduleRecord, error)
	// ListSchedules returns every record, sorted by name.
	ListSchedules(ctx context.Context) ([]*ScheduleRecord, error)
	// DeleteSchedule deletes the record, or returns ErrScheduleNotFound;
	// with keep as in PutSchedule, a record whose Source is keep is
	// refused with a *ScheduleOwnedError unless source is keep too.
	DeleteSchedule(ctx context.Context, name, source, keep string) error
	// PauseSchedule pauses or resumes the schedule. Resuming sets
	// LastTick to the store's now, so ticks passed while paused never run;
	// pausing or resuming twice changes nothing more. It returns the
	// record as stored, or ErrScheduleNotFound.
	PauseSchedule(ctx context.Context, name string, paused bool) (*ScheduleRecord, error)
	// ClaimTick moves LastTick from prev to tick, only while LastTick
	// equals prev, the schedule is not paused and no claim is unfinished;
	// it reports whether it did. With run, the claim is unfinished
	// (Pending, ClaimedAt = now) until RecordRun names its job; without,
	// the tick is dropped. This compare-and-set is what makes each tick
	// run once however many schedulers race for it.
	ClaimTick(ctx context.Context, name string, prev, tick time.Time, run bool) (bool, error)
	// RecordRun records jobID as the schedule's last run, at the store's
	// now. With a non-zero tick it finishes the claim of that tick (only
	// while LastTick equals tick; otherwise nothing changes); with a zero
	// tick it records a run triggered by hand and leaves the ticks alone.
	// ErrScheduleNotFound when the schedule is gone.
	RecordRun(ctx context.Context, name string, tick time.Time, jobID string) error
}

// ScheduleRecord is a schedule as a ScheduleStore keeps it.
type ScheduleRecord struct {
	// Name is the schedule's name, its key.
	Name string
	// Def is the encoded Schedule; the store keeps it as given.
	Def []byte
	// Timing identifies the fields that decide the ticks; a change of it
	// re-anchors the schedule (see PutSchedule).
	Timing string
	// Source is who defined it (SourceAPI, SourceConfig).
	Source string
	// Paused is true while paused.
	Paused bool
	// LastTick is the latest tick claimed, or the anchor (when the
	// schedule was created, re-timed or resumed).
	LastTick time.Time
	// Pending is true while the claim of LastTick has no job recorded;
	// ClaimedAt is when it was claimed.
	Pending   bool
	ClaimedAt time.Time
	// LastJobID, LastRunTick and LastRunAt describe the last run:
	// its job, its tick (zero when triggered by hand) and when it was
	// recorded. LastJobID is empty before the first run.
	LastJobID   string
	LastRunTick time.Time
	LastRunAt   time.Time
	// CreatedAt and UpdatedAt are when it was created and last changed.
	CreatedAt, UpdatedAt time.Time
}
