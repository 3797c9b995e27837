package sched

import (
	"time"

	"github.com/sluicehq/sluice/queue"
)

// This file is the scheduler's decisions as pure functions of a scope's
// settings and counts: the Model decides with them, and so do the stores
// whose transactions run Go (sqlitequeue), after reading the counts in
// the same transaction. The fair tag and order are backend.FairTag and
// backend.FairOrder.

// TenantRoom reports whether a tenant whose effective limit is lim, paused
// until pausedUntil, with n jobs counted against its limit, may take one
// more at now. Admitting a pending job counts the pending and active ones;
// starting one (Lease) counts the active ones. When a pause in force
// holds it back, wake is the pause's end: the scope is looked at again
// then.
func TenantRoom(lim int, pausedUntil, now time.Time, n int64) (ok bool, wake time.Time) {
	if pausedUntil.After(now) {
		return false, pausedUntil
	}
	return lim == queue.Unlimited || n < int64(lim), time.Time{}
}

// GroupLimits is what a group's decisions read: its settings, its pause
// and its last start (zero: none yet).
type GroupLimits struct {
	MaxConcurrency int
	MinInterval    time.Duration
	PausedUntil    time.Time
	LastStart      time.Time
}

// BlockedUntil is when the group may start a job again: the end of its
// pause, or its last start plus its crawl delay, whichever is later.
func (g GroupLimits) BlockedUntil() time.Time {
	until := g.PausedUntil
	if g.MinInterval > 0 && !g.LastStart.IsZero() {
		if end := g.LastStart.Add(g.MinInterval); end.After(until) {
			until = end
		}
	}
	return until
}

// GroupRoom reports whether the group may admit one more pending job at
// now, with pending and active jobs: not paused or inside its crawl delay,
// with a crawl delay no other pending job (that one is the next start),
// and pending + active below MaxConcurrency. wake is as for TenantRoom.
func GroupRoom(g GroupLimits, now time.Time, pending, active int64) (ok bool, wake time.Time) {
	if g.MinInterval > 0 && pending > 0 {
		return false, time.Time{} // the next start is taken; the start wakes the group
	}
	return GroupMayStart(g, now, pending+active)
}

// GroupMayStart reports whether the group lets one more job start at now
// with n jobs counted against MaxConcurrency (active ones for a Lease).
func GroupMayStart(g GroupLimits, now time.Time, n int64) (ok bool, wake time.Time) {
	if until := g.BlockedUntil(); until.After(now) {
		return false, until
	}
	return g.MaxConcurrency == 0 || n < int64(g.MaxConcurrency), time.Time{}
}

// TenantFill is how many of a tenant's waiting jobs a fill may release:
// all of them, or as many as its limit leaves room for beside its
// admitted (pending and active) jobs. A fill also needs the tenant not
// paused (TenantRoom's pause rule).
func TenantFill(lim int, waiting, admitted int64) int64 {
	if lim == queue.Unlimited {
		return waiting
	}
	return min(waiting, int64(lim)-admitted)
}

// GroupFill is TenantFill for a group: MaxConcurrency bounds its admitted
// jobs, and a crawl delay lets one job be pending at a time.
func GroupFill(g GroupLimits, waiting, pending, active int64) int64 {
	room := waiting
	if g.MaxConcurrency > 0 {
		room = min(room, int64(g.MaxConcurrency)-pending-active)
	}
	if g.MinInterval > 0 {
		room = min(room, 1-pending)
	}
	return room
}

// WaitDeadline is the MaxWait deadline of a job of a tenant whose
// effective MaxWait is maxWait that starts waiting at now; zero for none.
func WaitDeadline(now time.Time, maxWait time.Duration) time.Time {
	if maxWait <= 0 {
		return time.Time{}
	}
	return now.Add(maxWait)
}

// BacklogFull reports whether a tenant whose effective Backlog is capacity
// refuses one more ready job, with pending and waiting jobs.
func BacklogFull(capacity int, pending, waiting int64) bool {
	return capacity != queue.Unlimited && pending+waiting >= int64(capacity)
}

// GroupComplete reports whether a group with unfinished and total jobs
// (finished ones the cleaner deleted included) is done: it has jobs and
// none unfinished.
func GroupComplete(unfinished, total int64) bool { return unfinished == 0 && total > 0 }
