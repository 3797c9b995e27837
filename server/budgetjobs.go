package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/config"
)

// holdKept is how long past its Until a job's hold is still shown: a job
// nobody has leased again since keeps its last known reason.
const holdKept = time.Minute

// ticketKept is how long the server keeps the ticket of a job leased to a
// protocol worker that never says how it ended: by then the budget's own
// lease TTL has freed its in-flight places.
const ticketKept = time.Hour

// jobBudgets is what the server keeps, in memory, for jobs on budgets that
// it leases to protocol workers: their tickets until they end (settled
// with the usage the worker reports), and the holds of jobs given back to
// wait, to explain them on the job and in /metrics. A restart forgets
// both: tickets' in-flight places free at the budget's lease TTL, and a
// held job's hold is recorded again when it is next leased and held.
type jobBudgets struct {
	clk     clock.Clock
	mu      sync.Mutex
	tickets map[ticketKey]keptTicket
	holds   map[string]jobHold    // by job id
	paused  map[string]queuePause // by queue: paused by a budget's hold
	puts    int                   // insertions since the last sweep
}

type ticketKey struct{ id, token string }

type keptTicket struct {
	t     budget.Ticket
	until time.Time
}

type jobHold struct {
	queue  string
	hold   budget.Hold
	paused bool // the queue was paused and the job given back pending
}

type queuePause struct {
	budget string
	until  time.Time
}

func newJobBudgets(clk clock.Clock) *jobBudgets {
	return &jobBudgets{clk: clk, tickets: map[ticketKey]keptTicket{}, holds: map[string]jobHold{}, paused: map[string]queuePause{}}
}

// config returns the admission of leased jobs under cfg.
func (s *Server) jobBudgetsConfig(cfg *config.Config) queue.JobBudgets {
	jb := queue.JobBudgets{Budgets: s.budgets, Defaults: cfg.Budgets.DefaultClaim, PauseQueue: cfg.Budgets.PauseQueues}
	jb.OnHold = func(j *queue.Job, h budget.Hold) { s.jb.hold(j, h, jb.PausesQueue(h)) }
	return jb
}

// admitBudgets decides the budgets of jobs leased for protocol workers:
// held jobs are given back to wait and left out; the tickets of admitted
// ones are kept until the worker says how the job ended.
func (s *Server) admitBudgets(ctx context.Context, cfg *config.Config, leases []queue.Lease) []queue.Lease {
	if s.budgets == nil || s.jb == nil {
		return leases
	}
	jb := s.jobBudgetsConfig(cfg)
	kept := leases[:0]
	for _, l := range leases {
		t, ok := jb.Admit(ctx, s.backend, l, s.log)
		if !ok {
			continue
		}
		s.jb.admitted(l, t)
		kept = append(kept, l)
	}
	return kept
}

func (b *jobBudgets) admitted(l queue.Lease, t *budget.Ticket) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.holds, l.Job.ID)
	if t == nil {
		return
	}
	b.tickets[ticketKey{l.Job.ID, l.Token}] = keptTicket{t: *t, until: b.clk.Now().Add(ticketKept)}
	b.sweepLocked()
}

func (b *jobBudgets) hold(j *queue.Job, h budget.Hold, paused bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.holds[j.ID] = jobHold{queue: j.Queue, hold: h, paused: paused}
	if paused {
		b.paused[j.Queue] = queuePause{budget: h.Budget, until: h.Until}
	}
	b.sweepLocked()
}

// sweepLocked forgets expired holds and tickets, every so many insertions.
func (b *jobBudgets) sweepLocked() {
	if b.puts++; b.puts < 1024 {
		return
	}
	b.puts = 0
	now := b.clk.Now()
	for id, h := range b.holds {
		if now.After(h.hold.Until.Add(holdKept)) {
			delete(b.holds, id)
		}
	}
	for k, t := range b.tickets {
		if now.After(t.until) {
			delete(b.tickets, k)
		}
	}
	for q, p := range b.paused {
		if now.After(p.until) {
			delete(b.paused, q)
		}
	}
}

// settleJob settles the ticket of job id leased with token, if the server
// holds one, with the usage the worker reported (nil: at the estimate).
func (s *Server) settleJob(ctx context.Context, id, token string, usage map[string]budget.Cost) {
	if s.jb == nil {
		return
	}
	s.jb.mu.Lock()
	k := ticketKey{id, token}
	t, ok := s.jb.tickets[k]
	delete(s.jb.tickets, k)
	s.jb.mu.Unlock()
	if !ok {
		return
	}
	ctx = context.WithoutCancel(ctx) // the outcome is written: settle even if the worker hung up
	if _, err := s.budgets.Settle(ctx, t.t, usage); err != nil {
		s.log.Error("server: could not settle a job's budgets; its in-flight places free at their lease TTL", "job", id, "error", err)
	}
}

// settleOnEnd settles after a worker-protocol outcome call: on success, or
// when the lease is gone (the job is no longer this worker's to settle for).
func (s *Server) settleOnEnd(ctx context.Context, id, token string, usage map[string]budget.Cost, err error) {
	switch {
	case err == nil:
		s.settleJob(ctx, id, token, usage)
	case errors.Is(err, queue.ErrLeaseLost), errors.Is(err, queue.ErrNotFound):
		s.settleJob(ctx, id, token, nil)
	}
}

// holdBody explains what holds a job: a budget's limit and when room is
// expected.
type holdBody struct {
	Budget       string    `json:"budget"`
	Limit        string    `json:"limit"`
	Scope        string    `json:"scope,omitempty"`
	Until        time.Time `json:"until"`
	RetryAfterMS int64     `json:"retry_after_ms"`
	Reason       string    `json:"reason"`
}

// holdOf returns what holds job j, nil when nothing the server knows of
// does: j waits (scheduled or pending) and was last held by a budget.
func (s *Server) holdOf(j *queue.Job) *holdBody {
	if s.jb == nil || (j.State != queue.StateScheduled && j.State != queue.StatePending) {
		return nil
	}
	s.jb.mu.Lock()
	h, ok := s.jb.holds[j.ID]
	s.jb.mu.Unlock()
	now := s.clock.Now()
	if !ok || now.After(h.hold.Until.Add(holdKept)) {
		return nil
	}
	return &holdBody{Budget: h.hold.Budget, Limit: h.hold.Limit, Scope: h.hold.Scope, Until: h.hold.Until,
		RetryAfterMS: max(0, ceilMS(h.hold.Until.Sub(now))), Reason: h.hold.String()}
}

// heldCollector exports jobs held by budgets beside the ready ones, so
// that an autoscaler does not add workers for jobs a budget holds.
type heldCollector struct {
	s           *Server
	held, ready *prometheus.Desc
}

func (s *Server) watchJobHolds() {
	s.metrics.reg.MustRegister(&heldCollector{s: s,
		held:  prometheus.NewDesc("sluice_jobs_held", "Jobs waiting because a budget holds them (scheduled until room is expected, or pending in a queue a budget paused), by queue and budget.", []string{"queue", "budget"}, nil),
		ready: prometheus.NewDesc("sluice_jobs_ready", "Pending jobs a worker could start now: pending, less those in a queue a budget has paused. Scale workers on this, not on sluice_jobs{state=\"pending\"}.", []string{"queue"}, nil),
	})
}

func (c *heldCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.held; ch <- c.ready }

func (c *heldCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stats, err := c.s.backend.Stats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.ready, err)
		return
	}
	now := c.s.clock.Now()
	type qb struct{ queue, budget string }
	held := map[qb]int64{}
	paused := map[string]queuePause{}
	jb := c.s.jb
	jb.mu.Lock()
	for _, h := range jb.holds {
		if !h.paused && now.Before(h.hold.Until) {
			held[qb{h.queue, h.hold.Budget}]++
		}
	}
	for q, p := range jb.paused {
		if now.Before(p.until) {
			paused[q] = p
		}
	}
	jb.mu.Unlock()
	for _, st := range stats {
		pending := st.Counts[queue.StatePending]
		if p, ok := paused[st.Queue]; ok {
			held[qb{st.Queue, p.budget}] += pending
			pending = 0
		}
		ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, float64(pending), st.Queue)
	}
	for k, n := range held {
		ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(n), k.queue, k.budget)
	}
}
