package queuetest

import (
	"time"

	"github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// The model test's steps on time, scopes and settings.

func (r *modelRun) advance() bool { return r.advanceBy(r.micro(time.Millisecond, 3*time.Second)) }

// advanceBy moves the clock by d, or (half the time) to the next instant
// some work is due (a lease's end excluded) if that comes first, and
// leases from modelQ1 there, which does the work: a longer move makes one
// Lease do several kinds of it. A move whose Lease would make an open
// choice goes half as far; it reports whether the clock moved.
func (r *modelRun) advanceBy(d time.Duration) bool {
	now := r.now()
	target := now.Add(d)
	for _, tm := range r.m.Timers(now) {
		if r.rng.IntN(2) == 0 && tm.Kind != sched.TimerLease && tm.At.Before(target) {
			target = tm.At
			break
		}
	}
	for range 8 {
		req := backend.LeaseRequest{Queues: []string{modelQ1}, WorkerID: "w", Max: 1 + r.rng.IntN(2), LeaseFor: time.Second}
		m := r.m.Clone()
		m.Lease(target, req)
		if len(m.Choices()) == 0 {
			r.h.Clock.Set(target)
			r.logf("clock +%s", target.Sub(now))
			r.leaseFrom(modelQ1, req.Max)
			return true
		}
		r.logf("a move to +%s would leave the order open: %v", target.Sub(now), m.Choices())
		target = now.Add(target.Sub(now) / 2).Truncate(time.Microsecond)
		if !target.After(now) {
			break
		}
	}
	r.skipped++
	return false
}

// crash lets a held lease run out, as when its worker dies, and rescues
// the expired leases of one queue.
func (r *modelRun) crash() bool {
	l, ok := r.pickLease()
	if !ok {
		return false
	}
	j, _ := r.m.Job(l.id)
	if wait := j.LeaseUntil.Add(time.Microsecond).Sub(r.now()); wait > 0 {
		r.advanceBy(wait)
	}
	return r.rescue(j.Queue)
}

// rescue rescues the expired leases of queue q, one queue per call: the
// stores order several queues differently.
func (r *modelRun) rescue(q string) bool {
	req := backend.RescueRequest{Queues: []string{q}, MaxStalls: modelMaxStalls}
	m := r.m.Clone()
	want := m.RescueExpired(r.now(), req)
	if r.leftOpen(m, "rescue") {
		return false
	}
	got, err := r.h.Backend.RescueExpired(r.ctx, req)
	if err != nil {
		r.fatalf("RescueExpired(%s): %v", q, err)
	}
	r.logf("rescue %s: %+v", q, got)
	if got != want {
		r.fatalf("RescueExpired(%s) = %+v, the model %+v", q, got, want)
	}
	r.commit(m)
	return true
}

func (r *modelRun) pause() bool {
	scopes := r.scopes()
	s := scopes[r.rng.IntN(len(scopes))]
	d := time.Duration(0)
	if r.rng.IntN(3) > 0 {
		d = r.free(time.Millisecond, 3*time.Second)
	}
	return r.pauseScope(s, d)
}

// pauseScope pauses s for d (resumes it when d is 0) on both.
func (r *modelRun) pauseScope(s queue.Scope, d time.Duration) bool {
	m := r.m.Clone()
	want, wantErr := m.Pause(r.now(), s, d)
	if r.leftOpen(m, "pause") {
		return false
	}
	got, err := r.h.Client.BackOff(r.ctx, s, d)
	r.logf("pause %s for %s: %v", s, d, err)
	r.sameErr("BackOff", err, wantErr)
	if err == nil && !got.Equal(want) {
		r.fatalf("BackOff(%s, %s) = %s, the model %s", s, d, got, want)
	}
	r.commit(m)
	return true
}

// modelLimits are the limits setTenant picks from; 0 follows the
// defaults.
var modelLimits = []int{0, 0, queue.Unlimited, 1, 2, 3}

func (r *modelRun) setTenant() bool {
	names := append([]string{""}, modelAllTenants...)
	name := names[r.rng.IntN(len(names))]
	cfg := queue.TenantConfig{
		Limit:   modelLimits[r.rng.IntN(len(modelLimits))],
		Weight:  []int{0, 1, 2, 5}[r.rng.IntN(4)],
		Backlog: []int{0, 0, 3, 6, queue.Unlimited}[r.rng.IntN(5)],
	}
	if r.rng.IntN(3) == 0 {
		cfg.MaxWait = r.micro(500*time.Millisecond, 4*time.Second)
	}
	m := r.m.Clone()
	m.SetTenant(r.now(), name, cfg)
	if r.leftOpen(m, "set tenant") || overLimit(m, r.now()) > sched.MaxLeaseHolds {
		return false
	}
	var err error
	if name == "" {
		err = r.h.Client.SetTenantDefaults(r.ctx, cfg)
	} else {
		err = r.h.Client.SetTenant(r.ctx, name, cfg)
	}
	if err != nil {
		r.fatalf("SetTenant(%q, %+v): %v", name, cfg, err)
	}
	r.logf("set tenant %q %+v", name, cfg)
	r.commit(m)
	return true
}

// overLimit counts the pending jobs of tenants whose pending and active
// jobs are over their limit: each is a job a Lease finds blocked. A lower
// limit that makes too many is not set, so a Lease's outcome stays
// decided.
func overLimit(m *sched.Model, now time.Time) int {
	n := 0
	for _, name := range modelAllTenants {
		info := m.Tenant(now, name)
		if lim := int64(info.Effective.Limit); lim != queue.Unlimited && info.Pending+info.Active > lim {
			n += int(min(info.Pending, info.Pending+info.Active-lim))
		}
	}
	return n
}

func (r *modelRun) setAging() bool {
	step := []int{0, 1, 3}[r.rng.IntN(3)]
	if err := r.h.Client.SetAging(r.ctx, modelQ1, step); err != nil {
		r.fatalf("SetAging: %v", err)
	}
	r.m.SetAging(modelQ1, step)
	r.logf("aging %d", step)
	r.commit(r.m)
	return true
}

// cleanup deletes modelQ2's finished jobs past a random retention, and
// keeps cancelled jobs, so no group is deleted.
func (r *modelRun) cleanup() bool {
	req := backend.CleanupRequest{Queues: []string{modelQ2}, Retention: queue.Retention{
		Completed: r.micro(0, 2*time.Second), Failed: r.micro(0, 2*time.Second), Cancelled: -1,
	}}
	m := r.m.Clone()
	want := m.Cleanup(r.now(), req)
	if r.leftOpen(m, "cleanup") {
		return false
	}
	got, err := r.h.Backend.Cleanup(r.ctx, req)
	if err != nil {
		r.fatalf("Cleanup: %v", err)
	}
	r.logf("cleanup %+v: %d", req.Retention, got)
	if got != want {
		r.fatalf("Cleanup deleted %d jobs, the model %d", got, want)
	}
	r.commit(m)
	return true
}
