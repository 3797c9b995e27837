package amqpqueue

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// The jobs that name a Tenant or a Group are the Scheduler's (see doc.go,
// "Tenants and groups"): the lane stores them there, leases them from
// there and passes their transitions on. Their ids are the Scheduler's
// with schedPrefix before them, which no id of the lane's own starts with
// (those are hexadecimal), so every call by id knows where to go.
const schedPrefix = "g"

// checkScheduler refuses a Scheduler that cannot schedule tenants and
// groups.
func checkScheduler(s backend.Backend) error {
	if s == nil {
		return nil
	}
	f := s.Features()
	if f.Tenants == nil || f.Groups == nil {
		return invalid("Options.Scheduler", "must serve tenants and groups (backend.Features.Tenants and Groups), %s does not", f.Name)
	}
	return nil
}

// scheduled reports whether the job of spec goes to the Scheduler.
func scheduled(s queue.JobSpec) bool { return s.Tenant != "" || s.Group != "" }

// schedID returns the Scheduler's id of the lane id, and whether the id
// is one of the Scheduler's jobs.
func (b *Backend) schedID(id string) (string, bool) {
	if b.sched == nil {
		return "", false
	}
	return strings.CutPrefix(id, schedPrefix)
}

// outer returns a copy of a Scheduler's job with the id the lane shows.
func outer(j *queue.Job) *queue.Job {
	if j == nil {
		return nil
	}
	cp := *j
	cp.ID = schedPrefix + j.ID
	return &cp
}

// enqueueSplit stores the specs that name a tenant or a group on the
// Scheduler (one call, with its atomicity, before anything is published,
// so that a backlog refusal stores nothing) and publishes the rest.
func (b *Backend) enqueueSplit(ctx context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	var toSched, toBroker []queue.JobSpec
	var atSched, atBroker []int
	for i, s := range specs {
		if scheduled(s) {
			toSched, atSched = append(toSched, s), append(atSched, i)
		} else {
			toBroker, atBroker = append(toBroker, s), append(atBroker, i)
		}
	}
	out := make([]queue.Enqueued, len(specs))
	res, err := b.sched.Enqueue(ctx, toSched)
	if err == nil && len(res) != len(toSched) {
		err = fmt.Errorf("amqpqueue: scheduler returned %d results for %d specs", len(res), len(toSched))
	}
	if err != nil {
		return nil, err
	}
	for k, e := range res {
		e.Job = outer(e.Job)
		out[atSched[k]] = e
	}
	if len(toBroker) == 0 {
		return out, nil
	}
	res, err = b.enqueueBroker(ctx, toBroker)
	if err != nil {
		return nil, err
	}
	for k, e := range res {
		out[atBroker[k]] = e
	}
	return out, nil
}

// leaseBoth leases from the Scheduler and the broker. Every other call
// the broker's buffered deliveries go first, up to half of req.Max, so
// that neither kind of job starves the other; the Scheduler fills the
// rest. With LeaseWait it then waits, as Lease does, for deliveries up to
// req.Max. A paused queue is not consumed.
func (b *Backend) leaseBoth(ctx context.Context, req backend.LeaseRequest) ([]queue.Lease, error) {
	bq := b.pauses.unpaused(ctx, b, req.Queues)
	cons := b.consumersFor(bq)
	var out []queue.Lease
	if b.turn.Add(1)%2 == 1 && len(cons) > 0 {
		half := req
		half.Max = (req.Max + 1) / 2
		out = b.take(ctx, cons, half, nil)
	}
	sreq := req
	sreq.Max = req.Max - len(out)
	got, serr := b.sched.Lease(ctx, sreq)
	for _, l := range got {
		out = append(out, queue.Lease{Job: outer(l.Job), Token: l.Token})
	}
	if len(cons) > 0 {
		brq := req
		brq.Queues = bq
		out = b.take(ctx, cons, brq, out)
		if len(out) < req.Max && b.opts.LeaseWait > 0 && serr == nil {
			out = b.await(ctx, cons, brq, out)
		}
	}
	if serr != nil {
		if len(out) == 0 {
			return nil, serr
		}
		// The deliveries taken are leases now: hand them out, so that a
		// Scheduler fault does not stop the broker's jobs.
		b.log.Warn("amqpqueue: leasing from the scheduler failed", "err", serr)
	}
	return out, nil
}

// rescueScheduled adds the Scheduler's rescue of expired leases to r.
func (b *Backend) rescueScheduled(ctx context.Context, req backend.RescueRequest, r backend.RescueResult) (backend.RescueResult, error) {
	got, err := b.sched.RescueExpired(ctx, req)
	r.Requeued += got.Requeued
	r.Failed += got.Failed
	r.Cancelled += got.Cancelled
	return r, err
}

// mergeStats adds the Scheduler's counts to the lane's, queue by queue,
// keeping the later pause.
func mergeStats(lane, sched []queue.QueueStats) []queue.QueueStats {
	byQueue := map[string]queue.QueueStats{}
	for _, list := range [][]queue.QueueStats{lane, sched} {
		for _, s := range list {
			at, ok := byQueue[s.Queue]
			if !ok {
				at = queue.QueueStats{Queue: s.Queue, Counts: map[queue.State]int64{}}
			}
			for st, n := range s.Counts {
				at.Counts[st] += n
			}
			if s.PausedUntil.After(at.PausedUntil) {
				at.PausedUntil = s.PausedUntil
			}
			byQueue[s.Queue] = at
		}
	}
	out := make([]queue.QueueStats, 0, len(byQueue))
	for _, s := range byQueue {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b queue.QueueStats) int { return strings.Compare(a.Queue, b.Queue) })
	return out
}

// schedGroups is the Scheduler's groups part with the lane's job ids.
type schedGroups struct{ g backend.GroupBackend }

func outerProgress(p *queue.GroupProgress, err error) (*queue.GroupProgress, error) {
	if p != nil && p.CompletionJobID != "" {
		cp := *p
		cp.CompletionJobID = schedPrefix + p.CompletionJobID
		p = &cp
	}
	return p, err
}

func (s schedGroups) CreateGroup(ctx context.Context, spec queue.GroupSpec) (*queue.GroupProgress, error) {
	return outerProgress(s.g.CreateGroup(ctx, spec))
}

func (s schedGroups) Group(ctx context.Context, id string) (*queue.GroupProgress, error) {
	return outerProgress(s.g.Group(ctx, id))
}

func (s schedGroups) CancelGroup(ctx context.Context, id string) (*queue.GroupProgress, error) {
	return outerProgress(s.g.CancelGroup(ctx, id))
}

// schedTenants is the Scheduler's tenants part; a queue's pause is also
// noted by the lane, whose broker jobs of that queue it holds too.
type schedTenants struct {
	backend.TenantBackend
	b *Backend
}

// Pause pauses the scope on the Scheduler; a queue's pause also stops
// the lane consuming the queue from the broker until its end.
func (t schedTenants) Pause(ctx context.Context, scope queue.Scope, d time.Duration) (time.Time, error) {
	end, err := t.TenantBackend.Pause(ctx, scope, d)
	if err == nil && scope.Kind == queue.ScopeQueue {
		t.b.pauses.set(scope.Name, end)
	}
	return end, err
}
