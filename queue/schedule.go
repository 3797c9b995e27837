package queue

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// Schedule enqueues a job on a recurring timetable: at each tick of a
// cron expression or an interval, exactly one job from Job, however many
// schedulers (see Scheduler) run against the store. A backend keeps
// schedules when its Features name a Schedules part (CapSchedules).
//
// The zero values of the policies are their defaults: overlapping runs are
// allowed, and ticks missed while no scheduler ran collapse into one run.
type Schedule struct {
	// Name identifies the schedule: up to MaxNameLen bytes, no control
	// characters. Required.
	Name string
	// Cron is a cron expression of 5 fields (minute hour day-of-month
	// month day-of-week, as crontab(5)) or a descriptor: @yearly,
	// @monthly, @weekly, @daily, @hourly or @every <duration> such as
	// "@every 30s". "@every D" means exactly Every: D (D as
	// time.ParseDuration reads it, not rounded), under the same bounds.
	// An expression that matches no date (February 30) is refused.
	// Exactly one of Cron and Every is set.
	Cron string
	// Every is a fixed interval between ticks, from MinEvery (a second) to
	// MaxDuration; the first tick is Every after the schedule is set (or
	// resumed).
	Every time.Duration
	// TimeZone is the IANA time zone the cron fields are read in, such as
	// "Europe/Berlin"; default UTC. Daylight saving is handled by wall
	// clock: a tick that falls in the hour skipped in spring runs once, at
	// the first instant after the gap, and a wall time that occurs twice
	// in autumn runs once, at its first occurrence. Intervals (Every,
	// "@every") are real durations and ignore the zone.
	TimeZone string
	// Job is the job each tick enqueues. Its UniqueKey and RunAt must be
	// empty: the scheduler sets the key (the schedule's name and the
	// tick) and the time (the tick plus Jitter).
	Job JobSpec
	// Jitter delays each run by a random duration in [0, Jitter), so
	// many schedules on the same tick do not start at once; default 0.
	Jitter time.Duration
	// Overlap says what a tick does while the previous run has not
	// finished; default OverlapAllow.
	Overlap OverlapPolicy
	// Missed says what happens to ticks missed while no scheduler ran;
	// default MissedOnce.
	Missed MissedPolicy
	// CatchUp is how many missed ticks MissedCatchUp runs at most, the
	// latest ones; default DefaultCatchUp (10), at most MaxCatchUp.
	CatchUp int
	// Grace is how late a tick may be found and still count as on time
	// under MissedSkip; default DefaultGrace (one minute).
	Grace time.Duration
}

// OverlapPolicy says what a tick does while the schedule's previous run
// is still pending or running.
type OverlapPolicy string

// The overlap policies.
const (
	// OverlapAllow enqueues every tick; runs may overlap. The zero value
	// means it.
	OverlapAllow OverlapPolicy = "allow"
	// OverlapSkip drops a tick that comes while the previous run is not
	// finished.
	OverlapSkip OverlapPolicy = "skip"
	// OverlapWait holds the tick until the previous run finishes, then
	// runs it (ticks held meanwhile are handled as missed ones).
	OverlapWait OverlapPolicy = "wait"
)

// MissedPolicy says what happens to ticks that passed while no scheduler
// ran (downtime, a long pause of the process).
type MissedPolicy string

// The missed-tick policies.
const (
	// MissedOnce runs the latest missed tick once and drops the others.
	// The zero value means it.
	MissedOnce MissedPolicy = "once"
	// MissedCatchUp runs every missed tick, oldest first, up to the
	// schedule's CatchUp latest ones.
	MissedCatchUp MissedPolicy = "catchup"
	// MissedSkip drops missed ticks: only a tick found within Grace of
	// its time runs.
	MissedSkip MissedPolicy = "skip"
)

// Bounds and defaults of a Schedule.
const (
	DefaultCatchUp = 10
	MaxCatchUp     = 1000
	DefaultGrace   = time.Minute
	// MinEvery is the shortest interval.
	MinEvery = time.Second
)

// Schedule sources: who defined a schedule (ScheduleInfo.Source).
const (
	// SourceAPI marks schedules set through Client.SetSchedule (the Go
	// API, the HTTP API, the CLI).
	SourceAPI = "api"
	// SourceConfig marks schedules from the server's configuration file.
	SourceConfig = "config"
)

var (
	// ErrScheduleNotFound means no schedule has the given name.
	ErrScheduleNotFound = errors.New("queue: schedule not found")
	// ErrScheduleOwned is matched by *ScheduleOwnedError.
	ErrScheduleOwned = errors.New("queue: schedule owned by another source")
)

// ScheduleOwnedError says that a schedule was defined by another source
// (the configuration file) and cannot be changed or deleted from this
// one. Nothing was changed.
type ScheduleOwnedError struct {
	Name   string
	Source string
}

func (e *ScheduleOwnedError) Error() string {
	return fmt.Sprintf("queue: schedule %q is defined by %s and can only be changed there", e.Name, e.Source)
}

// Is makes errors.Is(err, ErrScheduleOwned) true.
func (e *ScheduleOwnedError) Is(target error) bool { return target == ErrScheduleOwned }

// withDefaults returns s with its zero policies set.
func (s Schedule) withDefaults() Schedule {
	if s.Overlap == "" {
		s.Overlap = OverlapAllow
	}
	if s.Missed == "" {
		s.Missed = MissedOnce
	}
	if s.CatchUp == 0 {
		s.CatchUp = DefaultCatchUp
	}
	if s.Grace == 0 {
		s.Grace = DefaultGrace
	}
	if s.TimeZone == "" {
		s.TimeZone = "UTC"
	}
	return s
}

// Validate returns an *InvalidArgumentError naming the first field of s
// that breaks a rule, with maxPayload as the job's payload limit
// (DefaultMaxPayload when zero or less). A bad field of Job is named
// Schedule.Job.<field>.
func (s Schedule) Validate(maxPayload int) error {
	if err := queuetype.ValidName(Field("Schedule", "Name"), s.Name, true); err != nil {
		return err
	}
	if _, err := compileSchedule(s); err != nil {
		return err
	}
	if err := s.validPolicies(); err != nil {
		return err
	}
	if s.Job.UniqueKey != "" || s.Job.UniqueFor != 0 {
		return queuetype.InvalidArgument(Field("Schedule", "Job.UniqueKey"), "must be empty: the scheduler sets the schedule name and the tick")
	}
	if !s.Job.RunAt.IsZero() {
		return queuetype.InvalidArgument(Field("Schedule", "Job.RunAt"), "must be empty: each run starts at its tick (plus jitter)")
	}
	if err := ValidateSpec(s.Job, maxPayload); err != nil {
		var ia *InvalidArgumentError
		if errors.As(err, &ia) {
			return queuetype.InvalidArgument(Field("Schedule", "Job."+ia.Path.Name), "%s", ia.Rule)
		}
		return err
	}
	return nil
}

// validPolicies checks the policy fields of s.
func (s Schedule) validPolicies() error {
	switch s.Overlap {
	case "", OverlapAllow, OverlapSkip, OverlapWait:
	default:
		return queuetype.InvalidArgument(Field("Schedule", "Overlap"), "must be %q, %q or %q, got %q", OverlapAllow, OverlapSkip, OverlapWait, s.Overlap)
	}
	switch s.Missed {
	case "", MissedOnce, MissedCatchUp, MissedSkip:
	default:
		return queuetype.InvalidArgument(Field("Schedule", "Missed"), "must be %q, %q or %q, got %q", MissedOnce, MissedCatchUp, MissedSkip, s.Missed)
	}
	if s.CatchUp < 0 || s.CatchUp > MaxCatchUp {
		return queuetype.InvalidArgument(Field("Schedule", "CatchUp"), "must be between 0 (the default, %d) and %d, got %d", DefaultCatchUp, MaxCatchUp, s.CatchUp)
	}
	if err := queuetype.ValidDuration(Field("Schedule", "Jitter"), s.Jitter); err != nil {
		return err
	}
	return queuetype.ValidDuration(Field("Schedule", "Grace"), s.Grace)
}

// timing is the part of s that decides its ticks: when it changes, the
// schedule starts counting again from the change.
func (s Schedule) timing() string {
	return strings.Join([]string{s.Cron, s.Every.String(), s.TimeZone}, "\x00")
}

// ScheduleInfo is a schedule as stored, with its state.
type ScheduleInfo struct {
	Schedule Schedule
	// Source is who defined it: SourceAPI or SourceConfig.
	Source string
	// Paused is true while the schedule enqueues nothing.
	Paused bool
	// LastTick is the latest tick handled (run or dropped by a policy);
	// when the schedule was set, changed or resumed, that time.
	LastTick time.Time
	// LastRun is the latest job the schedule enqueued; nil before the
	// first.
	LastRun *ScheduleRun
	// Next are the coming ticks, soonest first (empty while paused).
	Next []time.Time
	// CreatedAt and UpdatedAt are when the schedule was first stored and
	// last changed.
	CreatedAt, UpdatedAt time.Time
}

// ScheduleRun is one job a schedule enqueued.
type ScheduleRun struct {
	// JobID is the job's id.
	JobID string
	// Tick is the tick it ran for; zero for a run triggered by hand.
	Tick time.Time
	// At is when it was enqueued.
	At time.Time
	// State is the job's state as it was read; empty when the job no
	// longer exists (the cleaner removed it).
	State State
}
