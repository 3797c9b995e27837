package queue

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue/backend"
)

// SchedulerConfig configures a Scheduler. The zero value is the default.
type SchedulerConfig struct {
	// Poll is the longest wait between two reads of the schedules, so
	// that schedules set, changed or resumed elsewhere are seen; default
	// one second. A scheduler wakes at each tick as well.
	Poll time.Duration
	// ClaimTimeout is how long a claimed tick may stay without its job
	// before another scheduler enqueues it (its claimer died between the
	// claim and the enqueue); default 30 seconds. The job's unique key
	// keeps that from making a second job.
	ClaimTimeout time.Duration
	// Clock says when ticks are due; default the real clock.
	Clock clock.Clock
	// Logger receives store faults and refused enqueues; default
	// slog.Default().
	Logger *slog.Logger
}

// ScheduleUniqueFor is how long the job of a tick holds its unique key
// (the schedule's name and the tick), which makes a tick's job one even
// when a claim is finished twice.
const ScheduleUniqueFor = 24 * time.Hour

// Scheduler enqueues the jobs of the schedules kept in a Client's backend
// (CapSchedules) as their ticks come. Run as many as you like, in every
// server or worker process: each tick is claimed in the store (a
// compare-and-set of the schedule's last tick) and only the claimer
// enqueues its job, so a tick makes exactly one job.
type Scheduler struct {
	c   *Client
	cfg SchedulerConfig

	mu sync.Mutex
	// mine holds ticks this scheduler claimed but could not enqueue; it
	// retries them at once instead of waiting for ClaimTimeout.
	mine map[string]time.Time
}

// NewScheduler returns a scheduler enqueuing through c.
func NewScheduler(c *Client, cfg SchedulerConfig) *Scheduler {
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.ClaimTimeout <= 0 {
		cfg.ClaimTimeout = 30 * time.Second
	}
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Scheduler{c: c, cfg: cfg, mine: map[string]time.Time{}}
}

// Run handles due ticks until ctx ends, waking at each tick and at least
// every Poll; it returns nil then. Store faults are logged and retried at
// the next wake. A backend without CapSchedules is an *UnsupportedError
// at once.
func (s *Scheduler) Run(ctx context.Context) error {
	if _, err := s.c.schedules(); err != nil {
		return err
	}
	for {
		wait := s.cfg.Poll
		next, err := s.RunDue(ctx)
		if err != nil && ctx.Err() == nil {
			s.cfg.Logger.Error("queue: scheduling failed", "err", err)
		}
		// A tick already due (the clock moved while this pass ran) is
		// handled at once.
		if d := next.Sub(s.cfg.Clock.Now()); !next.IsZero() && d < wait {
			wait = max(d, 0)
		}
		t := s.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// RunDue enqueues the jobs of every tick due now, by each schedule's
// policies, and returns the soonest tick still to come (zero when none).
// An error of one schedule does not stop the others; the first is
// returned.
func (s *Scheduler) RunDue(ctx context.Context) (time.Time, error) {
	st, err := s.c.schedules()
	if err != nil {
		return time.Time{}, err
	}
	recs, err := st.ListSchedules(ctx)
	if err != nil {
		return time.Time{}, err
	}
	var first error
	var soonest time.Time
	for _, rec := range recs {
		next, err := s.handle(ctx, st, rec)
		if err != nil {
			s.cfg.Logger.Error("queue: schedule failed", "schedule", rec.Name, "err", err)
			if first == nil {
				first = err
			}
		}
		if !next.IsZero() && (soonest.IsZero() || next.Before(soonest)) {
			soonest = next
		}
	}
	return soonest, first
}

// handle runs the due ticks of one schedule and returns its next tick.
func (s *Scheduler) handle(ctx context.Context, st backend.ScheduleStore, rec *backend.ScheduleRecord) (time.Time, error) {
	if rec.Paused {
		return time.Time{}, nil
	}
	sc, err := decodeSchedule(rec)
	if err != nil {
		return time.Time{}, err
	}
	sc = sc.withDefaults()
	k, err := compileSchedule(sc)
	if err != nil {
		return time.Time{}, err
	}
	now := s.cfg.Clock.Now()
	if rec.Pending {
		return s.finishClaim(ctx, st, k, rec, sc, now)
	}
	ticks, drop := s.pick(k, sc, rec, now)
	if len(ticks) == 0 && drop.IsZero() {
		return k.next(rec.LastTick), nil
	}
	if len(ticks) > 0 && sc.Overlap != OverlapAllow {
		busy, err := s.busy(ctx, rec.LastJobID)
		if err != nil {
			return time.Time{}, err
		}
		switch {
		case busy && sc.Overlap == OverlapWait:
			return time.Time{}, nil
		case busy:
			drop, ticks = ticks[len(ticks)-1], nil
		default:
			ticks = ticks[:1] // the next run waits for this one
		}
	}
	if !drop.IsZero() {
		if _, err := st.ClaimTick(ctx, rec.Name, rec.LastTick, drop, false); err != nil {
			return time.Time{}, err
		}
		return k.next(drop), nil
	}
	return s.fireAll(ctx, st, k, rec, sc, ticks)
}

// pick chooses the due ticks to run by the missed policy, or the latest
// tick to drop without a run.
func (s *Scheduler) pick(k *ticker, sc Schedule, rec *backend.ScheduleRecord, now time.Time) (run []time.Time, drop time.Time) {
	limit := 1
	if sc.Missed == MissedCatchUp {
		limit = sc.CatchUp
	}
	ticks := k.due(rec.LastTick, now, limit)
	if len(ticks) == 0 {
		return nil, time.Time{}
	}
	if latest := ticks[len(ticks)-1]; sc.Missed == MissedSkip && now.Sub(latest) > sc.Grace {
		return nil, latest
	}
	return ticks, time.Time{}
}

// fireAll claims and enqueues ticks in order; it stops at the first claim
// lost to another scheduler.
func (s *Scheduler) fireAll(ctx context.Context, st backend.ScheduleStore, k *ticker, rec *backend.ScheduleRecord, sc Schedule, ticks []time.Time) (time.Time, error) {
	prev := rec.LastTick
	for _, t := range ticks {
		ok, err := st.ClaimTick(ctx, rec.Name, prev, t, true)
		if err != nil {
			return time.Time{}, err
		}
		if !ok {
			// Another scheduler took it; wake for the tick after.
			return k.next(t), nil
		}
		if err := s.fire(ctx, st, rec.Name, sc, t); err != nil {
			s.mu.Lock()
			s.mine[rec.Name] = t
			s.mu.Unlock()
			return time.Time{}, err
		}
		prev = t
	}
	return k.next(prev), nil
}

// finishClaim enqueues the job of a claim left pending: at once when this
// scheduler made it, after ClaimTimeout when another did (it may still be
// enqueuing). It returns when to look again.
func (s *Scheduler) finishClaim(ctx context.Context, st backend.ScheduleStore, k *ticker, rec *backend.ScheduleRecord, sc Schedule, now time.Time) (time.Time, error) {
	s.mu.Lock()
	mine := s.mine[rec.Name].Equal(rec.LastTick)
	s.mu.Unlock()
	if deadline := rec.ClaimedAt.Add(s.cfg.ClaimTimeout); !mine && now.Before(deadline) {
		return deadline, nil
	}
	if err := s.fire(ctx, st, rec.Name, sc, rec.LastTick); err != nil {
		return time.Time{}, err
	}
	s.mu.Lock()
	delete(s.mine, rec.Name)
	s.mu.Unlock()
	return k.next(rec.LastTick), nil
}

// fire enqueues the job of tick and records it. The unique key makes a
// second fire of the same tick return the first one's job.
func (s *Scheduler) fire(ctx context.Context, st backend.ScheduleStore, name string, sc Schedule, tick time.Time) error {
	spec := sc.Job
	spec.UniqueKey = TickKey(name, tick)
	spec.UniqueFor = ScheduleUniqueFor
	if sc.Jitter > 0 {
		spec.RunAt = tick.Add(rand.N(sc.Jitter))
	}
	j, err := s.c.Enqueue(ctx, spec)
	switch {
	case refusedForGood(err):
		// Trying again on every poll would fail the same way and leave
		// the claim pending: the tick is recorded without a job, once,
		// and the next tick tries again.
		s.cfg.Logger.Error("queue: schedule's job refused; tick skipped", "schedule", name, "tick", tick, "err", err)
		return st.RecordRun(ctx, name, tick, "")
	case err != nil && !errors.Is(err, ErrDuplicate):
		return err
	}
	return st.RecordRun(ctx, name, tick, j.ID)
}

// refusedForGood reports whether an enqueue was refused for what the job
// is, not for the store's state at the moment: a bad spec, a part the
// backend lacks, a limit it cannot enforce, a group that has ended.
func refusedForGood(err error) bool {
	return errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrUnsupported) ||
		errors.Is(err, ErrNotEnforced) || errors.Is(err, ErrGroupClosed)
}

// busy reports whether the job id exists and has not finished.
func (s *Scheduler) busy(ctx context.Context, id string) (bool, error) {
	if id == "" {
		return false, nil
	}
	j, err := s.c.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return !j.State.Final(), nil
}

// TickKey is the unique key of the job of a schedule's tick:
// "schedule:<name>@<tick in RFC 3339, UTC>".
func TickKey(name string, tick time.Time) string {
	return "schedule:" + name + "@" + tick.UTC().Format(time.RFC3339Nano)
}
