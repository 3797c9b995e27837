package server

import (
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/config"
)

// tenantsRetry is how often queues.tenants is written again while the job
// store does not take it at start.
const tenantsRetry = time.Second

// applyTenantsAtStart writes queues.tenants before the server listens. A
// job store that does not answer (Redis down at start) must not keep the
// server from starting: then it reports pending, and retryTenants writes
// the settings once the store answers. Invalid settings still fail.
func (s *Server) applyTenantsAtStart(ctx context.Context, t config.Tenants) (pending bool, err error) {
	err = s.applyTenants(ctx, t)
	if err == nil || errors.Is(err, queue.ErrInvalidArgument) {
		return false, err
	}
	s.log.Warn("server: queues.tenants not written yet: the job store does not answer; retrying every second", "error", err)
	return true, nil
}

// retryTenants writes queues.tenants every tenantsRetry until it succeeds
// or ctx ends.
func (s *Server) retryTenants(ctx context.Context, t config.Tenants) {
	tick := time.NewTicker(tenantsRetry)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := s.applyTenants(ctx, t)
		if err == nil {
			s.log.Info("server: queues.tenants written")
			return
		}
		if errors.Is(err, queue.ErrInvalidArgument) {
			s.log.Error("server: queues.tenants refused by the job store", "error", err)
			return
		}
	}
}
