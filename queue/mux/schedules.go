package mux

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Schedules live on the default backend, like tenant settings: a
// schedule is not tied to one queue. The jobs its ticks enqueue go to the
// backend of their queue, through queue.Client, which refuses a schedule
// whose queue's backend lacks unique keys (the tick's claim key).

func (m *Backend) schedules() (backend.ScheduleStore, error) {
	def := m.Default().Features()
	if def.Schedules == nil {
		return nil, backend.Unsupported(def.Name, queue.CapSchedules)
	}
	return def.Schedules, nil
}

// PutSchedule forwards to the default backend.
func (m *Backend) PutSchedule(ctx context.Context, rec backend.ScheduleRecord, keep string) (*backend.ScheduleRecord, error) {
	st, err := m.schedules()
	if err != nil {
		return nil, err
	}
	return st.PutSchedule(ctx, rec, keep)
}

// GetSchedule forwards to the default backend.
func (m *Backend) GetSchedule(ctx context.Context, name string) (*backend.ScheduleRecord, error) {
	st, err := m.schedules()
	if err != nil {
		return nil, err
	}
	return st.GetSchedule(ctx, name)
}

// ListSchedules forwards to the default backend.
func (m *Backend) ListSchedules(ctx context.Context) ([]*backend.ScheduleRecord, error) {
	st, err := m.schedules()
	if err != nil {
		return nil, err
	}
	return st.ListSchedules(ctx)
}

// DeleteSchedule forwards to the default backend.
func (m *Backend) DeleteSchedule(ctx context.Context, name, source, keep string) error {
	st, err := m.schedules()
	if err != nil {
		return err
	}
	return st.DeleteSchedule(ctx, name, source, keep)
}

// PauseSchedule forwards to the default backend.
func (m *Backend) PauseSchedule(ctx context.Context, name string, paused bool) (*backend.ScheduleRecord, error) {
	st, err := m.schedules()
	if err != nil {
		return nil, err
	}
	return st.PauseSchedule(ctx, name, paused)
}

// ClaimTick forwards to the default backend.
func (m *Backend) ClaimTick(ctx context.Context, name string, prev, tick time.Time, run bool) (bool, error) {
	st, err := m.schedules()
	if err != nil {
		return false, err
	}
	return st.ClaimTick(ctx, name, prev, tick, run)
}

// RecordRun forwards to the default backend.
func (m *Backend) RecordRun(ctx context.Context, name string, tick time.Time, jobID string) error {
	st, err := m.schedules()
	if err != nil {
		return err
	}
	return st.RecordRun(ctx, name, tick, jobID)
}
