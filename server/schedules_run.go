package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/config"
)

// schedulesRetry is how often the config's schedules are written again
// while the job store does not take them.
const schedulesRetry = time.Second

// startSchedules writes the config's schedules to the job store and runs
// the scheduler, when the store keeps schedules. Every server sharing a
// store runs one: each tick is claimed in the store, so it makes one job.
func (s *Server) startSchedules(ctx context.Context, wg *sync.WaitGroup) {
	if s.backend.Features().Schedules == nil {
		if len(s.Config().Schedules) > 0 {
			s.log.Warn("server: schedules are set but the job store does not keep them; they are ignored", "backend", s.backend.Features().Name)
		}
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.syncSchedulesUntilDone(ctx)
		sc := queue.NewScheduler(s.jobs, queue.SchedulerConfig{Logger: s.log})
		if err := sc.Run(ctx); err != nil {
			s.log.Error("server: scheduler stopped", "error", err)
		}
	}()
}

// syncSchedulesUntilDone writes the config's schedules, retrying while the
// store does not answer.
func (s *Server) syncSchedulesUntilDone(ctx context.Context) {
	for {
		err := s.syncSchedules(ctx, s.Config())
		if err == nil || errors.Is(err, queue.ErrInvalidArgument) || ctx.Err() != nil {
			return
		}
		s.log.Warn("server: schedules not written yet: the job store does not answer; retrying", "error", err)
		t := time.NewTimer(schedulesRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// syncSchedules makes the store's config schedules those of cfg: added,
// changed and removed. A schedule of the same name set through the API is
// replaced (the file wins).
func (s *Server) syncSchedules(ctx context.Context, cfg *config.Config) error {
	if s.jobs == nil || s.backend.Features().Schedules == nil {
		return nil
	}
	err := s.jobs.SyncSchedules(ctx, queue.SourceConfig, cfg.QueueSchedules())
	if err != nil {
		s.log.Error("server: writing the config's schedules", "error", err)
	}
	return err
}

// reloadSchedules applies the schedules of a new config version.
func (s *Server) reloadSchedules(cfg *config.Config) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if s.syncSchedules(ctx, cfg) == nil && s.backend != nil && s.backend.Features().Schedules != nil {
		s.log.Info("server: schedules reloaded", "count", len(cfg.Schedules))
	}
}
