package queuetest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// The model test's steps on jobs: enqueue, lease, end an attempt, cancel,
// retry.

// micro is a random duration between lo and hi, in whole microseconds
// (Redis keeps times in microseconds).
func (r *modelRun) micro(lo, hi time.Duration) time.Duration {
	n := int64(hi-lo) / int64(time.Microsecond)
	return lo + time.Duration(r.rng.Int64N(n+1))*time.Microsecond
}

// free returns a delay between lo and hi whose end is an instant at which
// nothing else is due, now or by a MaxWait or crawl delay counted from
// now.
func (r *modelRun) free(lo, hi time.Duration) time.Duration {
	now := r.now()
	taken := map[time.Time]bool{}
	for _, tm := range r.m.Timers(now) {
		taken[tm.At] = true
	}
	for _, n := range modelAllTenants {
		taken[now.Add(r.m.Tenant(now, n).Effective.MaxWait)] = true
	}
	for _, g := range r.open {
		if p, _, err := r.m.Group(now, g); err == nil {
			taken[now.Add(p.MinInterval)] = true
		}
	}
	for {
		if d := r.micro(lo, hi); !taken[now.Add(d)] {
			return d
		}
	}
}

// randomSpec returns a spec for one of the test's queues (see model.go for
// why each queue gets what it gets).
func (r *modelRun) randomSpec() queue.JobSpec {
	s := queue.JobSpec{Kind: modelKind, Tenant: modelTenants[r.rng.IntN(len(modelTenants))]}
	if r.rng.IntN(4) == 0 {
		s.Queue, s.Priority, s.MaxAttempts = modelQ2, 3+r.rng.IntN(2), 1+r.rng.IntN(2)
	} else {
		s.Queue, s.Priority, s.MaxAttempts = modelQ1, r.rng.IntN(3), 1+r.rng.IntN(3)
		if r.rng.IntN(2) == 0 {
			s.Group = r.someGroup()
		}
	}
	if r.rng.IntN(4) == 0 {
		s.RunAt = r.now().Add(r.free(time.Millisecond, 4*time.Second))
	}
	return s
}

func (r *modelRun) enqueue() bool {
	if r.unfinished() >= modelMaxJobs {
		return false
	}
	specs := make([]queue.JobSpec, 1+r.rng.IntN(3)/2)
	for i := range specs {
		specs[i] = r.randomSpec()
	}
	m := r.m.Clone()
	want, wantErr := m.Enqueue(r.now(), specs)
	if r.leftOpen(m, "enqueue") {
		return false
	}
	got, err := r.h.Client.EnqueueBatch(r.ctx, specs)
	r.logf("enqueue %v: %v", specs, err)
	r.sameErr("EnqueueBatch", err, wantErr)
	if err == nil {
		if len(got) != len(want) {
			r.fatalf("EnqueueBatch returned %d results, want %d", len(got), len(want))
		}
		for i, e := range want {
			r.mapID(e.ID, got[i].Job.ID)
		}
	}
	r.commit(m)
	return true
}

// mapID records that model job id is backend job bid.
func (r *modelRun) mapID(id sched.ID, bid string) {
	r.t.Helper()
	if old, ok := r.ids[id]; ok && old != bid {
		r.fatalf("model job %d is backend job %s, and now %s", id, old, bid)
	}
	if old, ok := r.byID[bid]; ok && old != id {
		r.fatalf("backend job %s is model job %d, and now %d", bid, old, id)
	}
	r.ids[id], r.byID[bid] = bid, id
}

func (r *modelRun) lease() bool {
	q := modelQ1
	if r.rng.IntN(3) == 0 {
		q = modelQ2
	}
	return r.leaseFrom(q, 1+r.rng.IntN(3))
}

// leaseFrom leases up to max jobs of queue q and checks that the backend
// hands out the jobs the model does; it reports whether any came.
func (r *modelRun) leaseFrom(q string, max int) bool {
	req := backend.LeaseRequest{Queues: []string{q}, WorkerID: "w", Max: max, LeaseFor: r.micro(time.Second, 6*time.Second)}
	m := r.m.Clone()
	want := m.Lease(r.now(), req)
	if r.leftOpen(m, "lease") {
		return false
	}
	got, err := r.h.Backend.Lease(r.ctx, req)
	if err != nil {
		r.fatalf("Lease(%s, %d): %v", q, max, err)
	}
	var gotIDs, wantIDs []sched.ID
	for _, l := range got {
		id, ok := r.byID[l.Job.ID]
		if !ok {
			r.fatalf("Lease handed out job %s, unknown to the model", l.Job.ID)
		}
		gotIDs = append(gotIDs, id)
		for _, w := range want {
			if w.ID == id {
				r.tokens[w.Lease] = l.Token
				r.held = append(r.held, modelLease{id: id, lease: w.Lease})
			}
		}
	}
	for _, w := range want {
		wantIDs = append(wantIDs, w.ID)
	}
	slices.Sort(gotIDs)
	slices.Sort(wantIDs)
	r.logf("lease %s max %d: %v", q, max, gotIDs)
	if !slices.Equal(gotIDs, wantIDs) {
		r.fatalf("Lease(%s, max %d) handed out model jobs %v, the model %v; before it:\n%s", q, max, gotIDs, wantIDs, r.dump())
	}
	r.commit(m)
	return len(got) > 0
}

// live returns the held leases the model says are still in force, and
// moves the others to dead.
func (r *modelRun) live() []modelLease {
	var keep []modelLease
	for _, l := range r.held {
		if j, ok := r.m.Job(l.id); ok && j.State == queue.StateActive && j.Lease == l.lease {
			keep = append(keep, l)
		} else if len(r.dead) < 20 {
			r.dead = append(r.dead, l)
		}
	}
	r.held = keep
	return keep
}

// pickLease returns a lease in force, chosen at random.
func (r *modelRun) pickLease() (modelLease, bool) {
	ls := r.live()
	if len(ls) == 0 {
		return modelLease{}, false
	}
	return ls[r.rng.IntN(len(ls))], true
}

// Ways to end an attempt.
const (
	endComplete = iota
	endFail
	endSnooze
	endRequeue
)

func (r *modelRun) complete() bool { return r.endRandom(endComplete) }
func (r *modelRun) fail() bool     { return r.endRandom(endFail) }
func (r *modelRun) snooze() bool   { return r.endRandom(endSnooze) }
func (r *modelRun) requeue() bool  { return r.endRandom(endRequeue) }

func (r *modelRun) endRandom(how int) bool {
	l, ok := r.pickLease()
	if ok {
		r.finishLease(l, how)
	}
	return ok
}

// stale ends an attempt with a lease that was lost: both must refuse it.
func (r *modelRun) stale() bool {
	if len(r.dead) == 0 {
		return false
	}
	i := r.rng.IntN(len(r.dead))
	l := r.dead[i]
	r.dead = slices.Delete(r.dead, i, i+1)
	r.finishLease(l, r.rng.IntN(4))
	return true
}

// finishLease ends the attempt of lease l one way, on both.
func (r *modelRun) finishLease(l modelLease, how int) {
	r.t.Helper()
	m := r.m.Clone()
	now := r.now()
	var want, got queue.State
	var wantErr, err error
	id, tok := r.ids[l.id], r.tokens[l.lease]
	switch how {
	case endComplete:
		wantErr = m.Complete(now, l.id, l.lease)
		if r.leftOpen(m, "complete") {
			return
		}
		err = r.h.Backend.Complete(r.ctx, id, tok, nil)
	case endFail:
		f := backend.Failure{Error: "boom", Permanent: r.rng.IntN(3) == 0}
		if !f.Permanent {
			f.RetryIn = r.free(time.Millisecond, 3*time.Second)
		}
		if want, wantErr = m.Fail(now, l.id, l.lease, f); r.leftOpen(m, "fail") {
			return
		}
		got, err = r.h.Backend.Fail(r.ctx, id, tok, f)
	default:
		d := time.Duration(0)
		if how == endSnooze && r.rng.IntN(2) == 0 {
			d = r.free(time.Millisecond, 3*time.Second)
		}
		if want, wantErr = m.Snooze(now, l.id, l.lease, d); r.leftOpen(m, "snooze") {
			return
		}
		got, err = r.h.Backend.Snooze(r.ctx, id, tok, d)
	}
	r.logf("end attempt of %d (lease %d) way %d: %s %v", l.id, l.lease, how, got, err)
	r.sameErr("ending an attempt", err, wantErr)
	if err == nil && got != want {
		r.fatalf("ending the attempt of model job %d way %d: state %s, the model %s", l.id, how, got, want)
	}
	r.commit(m)
}

// someJob returns one of the model's jobs at random.
func (r *modelRun) someJob() (sched.Job, bool) {
	jobs := r.m.Jobs()
	if len(jobs) == 0 {
		return sched.Job{}, false
	}
	return jobs[r.rng.IntN(len(jobs))], true
}

func (r *modelRun) cancel() bool {
	j, ok := r.someJob()
	if !ok {
		return false
	}
	m := r.m.Clone()
	want, wantErr := m.Cancel(r.now(), j.ID)
	if r.leftOpen(m, "cancel") {
		return false
	}
	got, err := r.h.Backend.Cancel(r.ctx, r.ids[j.ID])
	r.logf("cancel %d (%s): %v", j.ID, j.State, err)
	r.sameErr("Cancel", err, wantErr)
	if got != nil && got.State != want {
		r.fatalf("Cancel(model job %d): state %s, the model %s", j.ID, got.State, want)
	}
	r.commit(m)
	return true
}

func (r *modelRun) retry() bool {
	j, ok := r.someJob()
	if !ok || !backend.CommonCapabilities(r.h.Backend).Has(queue.CapRetry) {
		return false
	}
	m := r.m.Clone()
	wantErr := m.Retry(r.now(), j.ID)
	if r.leftOpen(m, "retry") {
		return false
	}
	_, err := r.h.Client.Retry(r.ctx, r.ids[j.ID])
	r.logf("retry %d (%s): %v", j.ID, j.State, err)
	r.sameErr("Retry", err, wantErr)
	r.commit(m)
	return true
}

// dump lists the model's unfinished jobs, for a failure's report.
func (r *modelRun) dump() string {
	var b strings.Builder
	for _, j := range r.m.Jobs() {
		if !j.State.Final() {
			fmt.Fprintf(&b, "  %d %s %s t=%q g=%q pr=%d tag=(%d,%d,%d) at=%d runAt=+%s wait=+%s\n", j.ID, j.Queue, j.State,
				j.Tenant, j.Group, j.Priority, j.Band, j.Rank, j.Start, j.Attempt, j.RunAt.Sub(Epoch), j.WaitUntil.Sub(Epoch))
		}
	}
	for _, n := range modelAllTenants {
		fmt.Fprintf(&b, "  tenant %s: %+v\n", n, r.m.Tenant(r.now(), n))
	}
	for _, g := range r.open {
		p, _, _ := r.m.Group(r.now(), g)
		fmt.Fprintf(&b, "  group %s: %+v\n", g, p)
	}
	return b.String()
}
