package queuetest

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// The model test's comparisons: everything the backend reports, against
// the model.

// compare checks the backend against the model. Groups go first: they
// name the completion jobs, which the job listing then expects.
func (r *modelRun) compare() {
	r.t.Helper()
	r.compareGroups()
	r.compareJobs()
	r.compareStats()
	r.compareTenants()
}

// modelSentinels are the errors a step may end in, matched by errors.Is.
var modelSentinels = []error{
	queue.ErrNotFound, queue.ErrLeaseLost, queue.ErrJobFinished, queue.ErrGroupClosed, queue.ErrGroupExists,
	queue.ErrGroupNotFound, queue.ErrBacklogFull, queue.ErrNotRetryable, queue.ErrDuplicate,
}

// sameErr checks that the backend's error got is the model's want: both
// nil, or both matching the same sentinel, with the same data for a full
// backlog or a refused retry.
func (r *modelRun) sameErr(op string, got, want error) {
	r.t.Helper()
	if (got == nil) != (want == nil) {
		r.fatalf("%s: error %v, the model %v", op, got, want)
	}
	if want == nil {
		return
	}
	for _, s := range modelSentinels {
		if errors.Is(want, s) != errors.Is(got, s) {
			r.fatalf("%s: error %v, the model %v", op, got, want)
		}
	}
	var gb, wb *queue.BacklogFullError
	if errors.As(want, &wb) && (!errors.As(got, &gb) || *gb != *wb) {
		r.fatalf("%s: error %v, the model %v", op, got, want)
	}
	var gr, wr *queue.NotRetryableError
	if errors.As(want, &wr) && (!errors.As(got, &gr) || gr.State != wr.State || gr.Group != wr.Group) {
		r.fatalf("%s: error %v, the model %v", op, got, want)
	}
}

// compareJobs lists every job and checks each against the model's; a job
// the model does not have (a second completion job) fails the run.
func (r *modelRun) compareJobs() {
	r.t.Helper()
	seen := map[sched.ID]bool{}
	f := queue.ListFilter{Limit: queue.MaxListLimit}
	for {
		p, err := r.h.Backend.List(r.ctx, f)
		if err != nil {
			r.fatalf("List: %v", err)
		}
		for _, got := range p.Jobs {
			id, ok := r.byID[got.ID]
			want, have := r.m.Job(id)
			if !ok || !have {
				r.fatalf("the backend has job %s (%s %s, kind %s), the model has not", got.ID, got.Queue, got.State, got.Kind)
			}
			seen[id] = true
			r.sameJob(got, want)
		}
		if p.Next == "" {
			break
		}
		f.Cursor = p.Next
	}
	for _, j := range r.m.Jobs() {
		if !seen[j.ID] {
			r.fatalf("model job %d (%s %s) is not in the backend's listing (backend id %q)", j.ID, j.Queue, j.State, r.ids[j.ID])
		}
	}
}

// sameJob compares what the backend reports of a job with the model.
func (r *modelRun) sameJob(got *queue.Job, want sched.Job) {
	r.t.Helper()
	type view struct {
		Queue, Tenant, Group, Kind string
		Priority, MaxAttempts      int
		State                      queue.State
		Attempt, Stalls            int
		CancelRequested            bool
		RunAt, LeaseUntil, Done    time.Time
	}
	v := func(j queue.JobSpec, st queue.State, at, stalls int, cr bool, runAt, until, done time.Time) view {
		out := view{Queue: j.Queue, Tenant: j.Tenant, Group: j.Group, Kind: j.Kind, Priority: j.Priority,
			MaxAttempts: j.MaxAttempts, State: st, Attempt: at, Stalls: stalls, CancelRequested: cr}
		switch {
		case st == queue.StateScheduled || st == queue.StateRetrying:
			out.RunAt = runAt.UTC()
		case st == queue.StateActive:
			out.LeaseUntil = until.UTC()
		case st.Final():
			out.Done = done.UTC()
		}
		return out
	}
	g := v(got.JobSpec, got.State, got.Attempt, got.Stalls, got.CancelRequested, got.RunAt, got.LeaseUntil, got.FinishedAt)
	w := v(want.JobSpec, want.State, want.Attempt, want.Stalls, want.CancelRequested, want.RunAt, want.LeaseUntil, want.FinishedAt)
	if g != w {
		r.fatalf("job %s (model %d):\n got %+v\nwant %+v", got.ID, want.ID, g, w)
	}
	if want.Completes != "" {
		r.sameReport(got, want)
	}
}

// sameReport checks a completion job's payload, the group's report.
func (r *modelRun) sameReport(got *queue.Job, want sched.Job) {
	r.t.Helper()
	var g, w queue.CompletionReport
	if err := json.Unmarshal(got.Payload, &g); err != nil {
		r.fatalf("completion job %s: payload %q: %v", got.ID, got.Payload, err)
	}
	if err := json.Unmarshal(want.Payload, &w); err != nil || g != w {
		r.fatalf("completion job %s of group %s: report %+v, the model %+v", got.ID, want.Completes, g, w)
	}
}

// compareStats checks each queue's counts and pause.
func (r *modelRun) compareStats() {
	r.t.Helper()
	st, err := r.h.Backend.Stats(r.ctx)
	if err != nil {
		r.fatalf("Stats: %v", err)
	}
	want := r.m.Stats(r.now())
	for _, q := range modelQueues {
		g, listed := statsOf(st, q)
		w, _ := statsOf(want, q)
		if !maps.Equal(nonZero(g.Counts), nonZero(w.Counts)) {
			r.fatalf("Stats of %s: %v, the model %v", q, nonZero(g.Counts), nonZero(w.Counts))
		}
		// A queue without jobs may be left out, pause or not.
		if wp := r.m.QueuePausedUntil(r.now(), q); listed && !g.PausedUntil.Equal(wp) {
			r.fatalf("Stats of %s: paused until %s, the model %s", q, g.PausedUntil, wp)
		}
	}
}

func statsOf(st []queue.QueueStats, q string) (queue.QueueStats, bool) {
	for _, s := range st {
		if s.Queue == q {
			return s, true
		}
	}
	return queue.QueueStats{}, false
}

func nonZero(c map[queue.State]int64) map[queue.State]int64 {
	out := map[queue.State]int64{}
	for s, n := range c {
		if n != 0 {
			out[s] = n
		}
	}
	return out
}

// compareTenants checks one tenant's settings and counts in turn (every
// one, on a backend without a tenant list), and the tenant list every
// third step: listing is the costliest read of a step.
func (r *modelRun) compareTenants() {
	r.t.Helper()
	list := backend.CapabilitiesOf(r.h.Backend).Has(queue.CapTenantList)
	for i, n := range modelAllTenants {
		if list && i != r.step%len(modelAllTenants) {
			continue
		}
		got, err := r.h.Client.Tenant(r.ctx, n)
		if err != nil {
			r.fatalf("Tenant(%s): %v", n, err)
		}
		if want := r.m.Tenant(r.now(), n); !sameTenant(*got, want) {
			r.fatalf("Tenant(%s):\n got %+v\nwant %+v", n, *got, want)
		}
	}
	if !list || r.step%3 != 0 {
		return
	}
	page, err := r.h.Client.Tenants(r.ctx, queue.TenantFilter{Limit: queue.MaxListLimit})
	if err != nil {
		r.fatalf("Tenants: %v", err)
	}
	var names []string
	for _, info := range page.Tenants {
		names = append(names, info.Tenant)
		if want := r.m.Tenant(r.now(), info.Tenant); !sameTenant(*info, want) {
			r.fatalf("Tenants lists %s as\n %+v\nwant %+v", info.Tenant, *info, want)
		}
	}
	if want := r.m.Listed(); !slices.Equal(names, want) {
		r.fatalf("Tenants lists %v, the model %v", names, want)
	}
}

func sameTenant(a, b queue.TenantInfo) bool {
	return a.Tenant == b.Tenant && a.Own == b.Own && a.Effective == b.Effective && a.PausedUntil.Equal(b.PausedUntil) &&
		a.Scheduled == b.Scheduled && a.Pending == b.Pending && a.Waiting == b.Waiting &&
		a.Active == b.Active && a.Retrying == b.Retrying
}

// compareGroups checks every group's progress, and learns the backend ids
// of new completion jobs.
func (r *modelRun) compareGroups() {
	r.t.Helper()
	for _, id := range r.groups {
		if r.settled[id] {
			continue
		}
		want, completion, wantErr := r.m.Group(r.now(), id)
		r.settled[id] = want.Done
		got, err := r.h.Client.Group(r.ctx, id)
		r.sameErr("Group("+id+")", err, wantErr)
		if err != nil {
			continue
		}
		if completion != 0 && got.CompletionJobID != "" {
			r.mapID(completion, got.CompletionJobID)
		}
		cj := got.CompletionJobID
		want.CompletionJobID, got.CompletionJobID = "", ""
		if (cj != "") != (completion != 0) || !sameProgress(*got, want) {
			r.fatalf("Group(%s) (completion job %q):\n got %+v\nwant %+v (completion job %d)", id, cj, *got, want, completion)
		}
	}
}

func sameProgress(a, b queue.GroupProgress) bool {
	sa, sb := a.GroupSpec, b.GroupSpec
	return sa.ID == sb.ID && sa.Tenant == sb.Tenant && sa.MaxConcurrency == sb.MaxConcurrency &&
		sa.MinInterval == sb.MinInterval && sa.TTL == sb.TTL && sa.CompletionKind == sb.CompletionKind &&
		sa.CompletionQueue == sb.CompletionQueue && a.Scheduled == b.Scheduled && a.Pending == b.Pending && a.Waiting == b.Waiting &&
		a.Active == b.Active && a.Retrying == b.Retrying && a.Completed == b.Completed && a.Failed == b.Failed &&
		a.Cancelled == b.Cancelled && a.CancelRequested == b.CancelRequested && a.Done == b.Done &&
		a.PausedUntil.Equal(b.PausedUntil) && a.CreatedAt.Equal(b.CreatedAt) && a.FinishedAt.Equal(b.FinishedAt)
}
