package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetype"
)

// NextTicks is how many coming ticks ScheduleInfo.Next lists.
const NextTicks = 5

// schedules returns the backend's ScheduleStore, or the *UnsupportedError
// of CapSchedules.
func (c *Client) schedules() (backend.ScheduleStore, error) {
	f := c.b.Features()
	if f.Schedules == nil {
		return nil, backend.Unsupported(f.Name, CapSchedules)
	}
	return f.Schedules, nil
}

// SetSchedule creates or replaces the schedule named s.Name, defined
// through the API (SourceAPI). A schedule defined in the server's
// configuration (SourceConfig) is refused with a *ScheduleOwnedError: the
// file wins. A new schedule, or one whose Cron, Every or TimeZone changed,
// counts its ticks from now; other changes keep its state. A bad field is
// an *InvalidArgumentError naming it, and nothing is stored.
func (c *Client) SetSchedule(ctx context.Context, s Schedule) (*ScheduleInfo, error) {
	return c.putSchedule(ctx, s, SourceAPI, SourceConfig)
}

// putSchedule validates and stores s from source.
func (c *Client) putSchedule(ctx context.Context, s Schedule, source, keep string) (*ScheduleInfo, error) {
	st, err := c.schedules()
	if err != nil {
		return nil, err
	}
	if err := c.validSchedule(ctx, s); err != nil {
		return nil, err
	}
	// The job's queue must hold unique keys (and delays, for jitter): the
	// scheduler sets them, so a backend without them is refused now, not
	// at the tick.
	probe := s.Job
	probe.UniqueKey = "probe"
	if s.Jitter > 0 {
		probe.RunAt = time.Now().Add(time.Hour)
	}
	if err := backend.CheckPlaced(c.b, []JobSpec{probe}); err != nil {
		return nil, fmt.Errorf("queue: schedule %q: queue %q cannot take scheduled jobs (each tick's job has a unique key): %w", s.Name, s.Job.Queue, err)
	}
	def, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("queue: encoding schedule: %w", err)
	}
	rec := backend.ScheduleRecord{Name: s.Name, Def: def, Timing: s.timing(), Source: source}
	got, err := st.PutSchedule(ctx, rec, keep)
	if err != nil {
		return nil, err
	}
	return c.scheduleInfo(ctx, got)
}

// validSchedule checks s by its rules and its job's webhook by the
// client's WebhookCheck.
func (c *Client) validSchedule(ctx context.Context, s Schedule) error {
	if err := s.Validate(c.cfg.MaxPayload); err != nil {
		return err
	}
	at := func(name string) FieldPath { return Field("Schedule", "Job."+name) }
	return c.checkHook(ctx, s.Job.Webhook, s.Job.Queue, at) // hookcheck.go
}

// SyncSchedules makes the schedules of source exactly list: each is
// created or replaced, whatever source defined it before (this is how the
// configuration file wins over the API), and every other schedule of
// source is deleted. Every schedule is validated first; a bad one is an
// *InvalidArgumentError with the index in schedules[i] and nothing is
// changed.
func (c *Client) SyncSchedules(ctx context.Context, source string, list []Schedule) error {
	st, err := c.schedules()
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for i, s := range list {
		if err := c.validSchedule(ctx, s); err != nil {
			var ia *InvalidArgumentError
			if errors.As(err, &ia) {
				return queuetype.InvalidArgument(ia.Path.At("schedules", i), "%s", ia.Rule)
			}
			return err
		}
		if want[s.Name] {
			return queuetype.InvalidArgument(Field("Schedule", "Name").At("schedules", i), "must be unique, %q is defined twice", s.Name)
		}
		want[s.Name] = true
	}
	for _, s := range list {
		if _, err := c.putSchedule(ctx, s, source, ""); err != nil {
			return fmt.Errorf("queue: schedule %q: %w", s.Name, err)
		}
	}
	all, err := st.ListSchedules(ctx)
	if err != nil {
		return err
	}
	for _, r := range all {
		if r.Source == source && !want[r.Name] {
			if err := st.DeleteSchedule(ctx, r.Name, source, ""); err != nil && !errors.Is(err, ErrScheduleNotFound) {
				return err
			}
		}
	}
	return nil
}

// Schedule returns the schedule named name with its state, or
// ErrScheduleNotFound.
func (c *Client) Schedule(ctx context.Context, name string) (*ScheduleInfo, error) {
	st, err := c.schedules()
	if err != nil {
		return nil, err
	}
	rec, err := st.GetSchedule(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.scheduleInfo(ctx, rec)
}

// Schedules returns every schedule with its state, sorted by name.
func (c *Client) Schedules(ctx context.Context) ([]*ScheduleInfo, error) {
	st, err := c.schedules()
	if err != nil {
		return nil, err
	}
	recs, err := st.ListSchedules(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*ScheduleInfo, 0, len(recs))
	for _, r := range recs {
		info, err := c.scheduleInfo(ctx, r)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// DeleteSchedule deletes a schedule defined through the API; jobs it
// enqueued stay. A schedule from the configuration is refused with a
// *ScheduleOwnedError; ErrScheduleNotFound when there is none.
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	st, err := c.schedules()
	if err != nil {
		return err
	}
	return st.DeleteSchedule(ctx, name, SourceAPI, SourceConfig)
}

// PauseSchedule stops the schedule from enqueuing until ResumeSchedule.
// Any schedule may be paused, whoever defined it.
func (c *Client) PauseSchedule(ctx context.Context, name string) (*ScheduleInfo, error) {
	return c.pause(ctx, name, true)
}

// ResumeSchedule resumes a paused schedule; ticks that passed while it was
// paused never run.
func (c *Client) ResumeSchedule(ctx context.Context, name string) (*ScheduleInfo, error) {
	return c.pause(ctx, name, false)
}

func (c *Client) pause(ctx context.Context, name string, paused bool) (*ScheduleInfo, error) {
	st, err := c.schedules()
	if err != nil {
		return nil, err
	}
	rec, err := st.PauseSchedule(ctx, name, paused)
	if err != nil {
		return nil, err
	}
	return c.scheduleInfo(ctx, rec)
}

// TriggerSchedule enqueues the schedule's job now, outside its ticks
// (paused or not, whatever its overlap policy), records it as the last
// run and returns it.
func (c *Client) TriggerSchedule(ctx context.Context, name string) (*Job, error) {
	st, err := c.schedules()
	if err != nil {
		return nil, err
	}
	rec, err := st.GetSchedule(ctx, name)
	if err != nil {
		return nil, err
	}
	s, err := decodeSchedule(rec)
	if err != nil {
		return nil, err
	}
	j, err := c.Enqueue(ctx, s.Job)
	if err != nil {
		return nil, err
	}
	return j, st.RecordRun(ctx, name, time.Time{}, j.ID)
}

// decodeSchedule reads the definition of rec.
func decodeSchedule(rec *backend.ScheduleRecord) (Schedule, error) {
	var s Schedule
	if err := json.Unmarshal(rec.Def, &s); err != nil {
		return s, fmt.Errorf("queue: schedule %q: decoding its definition: %w", rec.Name, err)
	}
	return s, nil
}

// scheduleInfo builds the view of rec, reading its last job's state.
func (c *Client) scheduleInfo(ctx context.Context, rec *backend.ScheduleRecord) (*ScheduleInfo, error) {
	s, err := decodeSchedule(rec)
	if err != nil {
		return nil, err
	}
	info := &ScheduleInfo{
		Schedule: s, Source: rec.Source, Paused: rec.Paused, LastTick: rec.LastTick,
		CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt,
	}
	if k, err := compileSchedule(s); err == nil && !rec.Paused {
		info.Next = k.upcoming(rec.LastTick, NextTicks)
	}
	if rec.LastJobID != "" {
		run := &ScheduleRun{JobID: rec.LastJobID, Tick: rec.LastRunTick, At: rec.LastRunAt}
		j, err := c.b.Get(ctx, rec.LastJobID)
		switch {
		case err == nil:
			run.State = j.State
		case !errors.Is(err, ErrNotFound):
			return nil, err
		}
		info.LastRun = run
	}
	return info, nil
}
