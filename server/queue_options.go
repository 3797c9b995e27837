package server

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/server/config"
)

// queueOptions holds what the server derives from the queue settings of
// sluice.yaml beyond the job client: start rates, load-based priority, the
// overload monitor, per-queue aging and the queue list the per-queue
// maintenance needs. Every part follows config changes (see
// applyQueueOptions).
type queueOptions struct {
	load   *loadGate
	tiers  *tierCache
	aging  *agingSync
	queues *queueNames
}

func newQueueOptions(s *Server) *queueOptions {
	return &queueOptions{
		load:   newLoadGate(s.log),
		tiers:  newTierCache(s),
		aging:  &agingSync{},
		queues: &queueNames{},
	}
}

// applyQueueOptions brings the job client and the server's queue parts
// to cfg. It runs at every Apply.
func (s *Server) applyQueueOptions(cfg *config.Config) {
	if s.jobs == nil {
		return
	}
	if s.qo == nil {
		s.qo = newQueueOptions(s)
	}
	q := &cfg.Queues
	s.qo.load.update(q.Overload)
	s.qo.tiers.reset()
	s.qo.aging.want(q)
	s.jobs.Reconfigure(s.clientConfig(cfg))
}

// clientConfig is the job client's admission and priority for cfg.
func (s *Server) clientConfig(cfg *config.Config) queue.ClientConfig {
	q := &cfg.Queues
	cc := queue.ClientConfig{
		MaxPayload: int(q.MaxPayloadBytes),
		// Enqueues over a queue's depth cap, or while the machine is
		// overloaded, are refused with an overload error, answered as
		// 503 + Retry-After.
		Admission: queue.Admission{
			MaxDepth: q.MaxDepth, QueueMaxDepth: q.QueueMaxDepth(),
			DepthCacheFor: q.Admission.DepthCacheFor.D(), RetryAfter: q.Admission.RetryAfter.D(),
		},
	}
	if q.Overload.Enabled {
		cc.Admission.Monitor = s.qo.load
	}
	if pr := q.Priority; pr.Enabled {
		cc.Priority = queue.PriorityConfig{Func: s.qo.tiers.priorityFunc(pr), Load: s.limits, Window: pr.Window.D()}
	}
	return cc
}

// specDefaults fills what the specs leave zero from their queues'
// settings: the attempts.
func (s *Server) specDefaults(specs []queue.JobSpec) {
	q := &s.Config().Queues
	if q.MaxAttempts == 0 && len(q.PerQueue) == 0 {
		return
	}
	for i := range specs {
		if specs[i].MaxAttempts == 0 {
			specs[i].MaxAttempts = q.For(specs[i].Queue).MaxAttempts
		}
	}
}

// groupDefaults fills what a new group leaves zero from queues.groups.
func (s *Server) groupDefaults(g *queue.GroupSpec) {
	d := s.Config().Queues.Groups
	if g.MaxConcurrency == 0 {
		g.MaxConcurrency = d.MaxConcurrency
	}
	if g.MinInterval == 0 {
		g.MinInterval = d.MinInterval.D()
	}
	if g.TTL == 0 {
		g.TTL = d.TTL.D()
	}
	if g.CompletionQueue == "" && g.CompletionKind != "" {
		g.CompletionQueue = d.CompletionQueue
	}
}

// retryIn is the delay before the next attempt of job, failed without a
// delay of its own: its queue's backoff.
func (s *Server) retryIn(job *queue.Job) time.Duration {
	return s.Config().Queues.For(job.Queue).Backoff(job.Attempt, nil)
}

// leaseFor is the default lease of a lease call on queues: the longest of
// their leases, so that no job is leased shorter than its queue's lease
// (leaseJobs shortens the others).
func (s *Server) leaseFor(queues []string) time.Duration {
	q := &s.Config().Queues
	d := q.Lease.D()
	if len(q.PerQueue) == 0 {
		return d
	}
	d = 0
	for _, name := range queues {
		d = max(d, q.For(name).Lease)
	}
	return d
}

// heartbeatLease is the default lease a heartbeat extends job id by: its
// queue's (the job is read only when some queue has a lease of its own).
func (s *Server) heartbeatLease(ctx context.Context, id string) time.Duration {
	q := &s.Config().Queues
	if !perQueueLease(q) {
		return q.Lease.D()
	}
	if j, err := s.backend.Get(ctx, id); err == nil {
		return q.For(j.Queue).Lease
	}
	return q.Lease.D()
}

func perQueueLease(q *config.Queues) bool {
	for _, o := range q.PerQueue {
		if o.Lease != 0 {
			return true
		}
	}
	return false
}

// leaseJobs leases for the worker protocol: nothing while the overload
// monitor reports overload (a long-poll waits for the load to fall),
// each job's lease set to its queue's when the call named no lease, and
// each job counted against the start rates: one over a rate is given back
// to wait (see queue.StartRates.Admit) and not handed out; then each
// job's budgets are admitted, and a held job given back to wait too (see
// queue.JobBudgets).
func (s *Server) leaseJobs(ctx context.Context, req backend.LeaseRequest, wait time.Duration, ownLease bool) ([]queue.Lease, error) {
	cfg := s.Config()
	if s.qo != nil && cfg.Queues.Overload.Enabled && cfg.Queues.Overload.Pauses() {
		var left time.Duration
		if left = s.qo.load.waitClear(ctx, wait, s.leases.stopping); left < 0 {
			return nil, nil
		}
		wait = left
	}
	leases, err := s.leases.lease(ctx, req, wait)
	if err != nil || len(leases) == 0 {
		return leases, err
	}
	s.qo.queues.seen(leases)
	if !ownLease {
		s.shortenLeases(ctx, cfg, req.LeaseFor, leases)
	}
	rates := cfg.Queues.StartRates
	if rates.Set() {
		lib := rates.Library(s.limits)
		kept := leases[:0]
		for _, l := range leases {
			if lib.Admit(ctx, s.backend, l, s.log) {
				kept = append(kept, l)
			}
		}
		leases = kept
	}
	return s.admitBudgets(ctx, cfg, leases), nil // budgetjobs.go
}

// shortenLeases brings each job leased for `used` to its queue's lease
// when that is shorter.
func (s *Server) shortenLeases(ctx context.Context, cfg *config.Config, used time.Duration, leases []queue.Lease) {
	if len(cfg.Queues.PerQueue) == 0 {
		return
	}
	for i, l := range leases {
		d := cfg.Queues.For(l.Job.Queue).Lease
		if d >= used {
			continue
		}
		st, err := s.backend.Extend(ctx, l.Job.ID, l.Token, d)
		if err != nil {
			s.log.Warn("server: could not set a job's lease to its queue's", "job", l.Job.ID, "error", err)
			continue
		}
		leases[i].Job.LeaseUntil = st.Until
	}
}
