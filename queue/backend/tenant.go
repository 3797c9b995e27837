package backend

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// TenantBackend is the part a Backend with CapTenants serves
// (Features.Tenants): per-tenant limits, the fair order and pauses. The rules below
// hold inside the same atomic steps as Backend's transitions; queuetest
// checks them.
//
// # Limit and the waiting state
//
// A tenant's slot is the lease of its job: the number of the tenant's
// active jobs never exceeds its effective Limit, checked in the atomic
// Lease step against a count that the same steps keep (an index or a
// counter written by every transition into or out of active, never a
// second record that can drift from the job's state). So a slot frees
// exactly when its job leaves active: completed, failed, retrying,
// snoozed, requeued, cancelled, or rescued after its lease expired.
//
// A ready job (enqueued without delay, or due) is "admitted" (pending)
// when its tenant and its group (see GroupBackend) both have room:
// active + pending < limit, not paused, and for a group with MinInterval
// no other pending job; otherwise it waits (StateWaiting). Jobs without a
// tenant have no limit. Whenever room appears (a job leaves active or
// pending, a limit rises, a pause ends), the step that made it releases
// the scope's waiting jobs, best first in the fair order below, as many as
// there is room for (a job whose other scope is still full stays waiting).
// Lease checks the rule again for every job it hands out; a pending job
// that it finds blocked moves to waiting.
//
// # Fair order
//
// Each queue has a virtual time V, the largest start tag of the jobs
// leased from it (0 at first); each (queue, tenant) pair has a finish tag
// F (0 at first). When a job first becomes ready it gets the start tag
// max(V, F) and F becomes that tag plus FairUnit/weight (FairUnit, FairTag
// and FairOrder compute them). It keeps the tag for life:
// retries, snoozes and requeues go back to their place. Ready jobs are
// ordered by FairOrder: (priority, start, sequence) without aging; with
// the queue's aging step S, (start + priority × S × FairUnit, sequence). So at equal priority backlogged tenants take turns by weight,
// a newcomer starts at V (next in line, not behind another tenant's
// flood), and with aging a job gains one priority level every S rounds
// (a round is one job per backlogged tenant of weight 1). Lease hands out
// pending jobs in this order; waiting jobs of a scope are released in it.
//
// # Backlog, MaxWait and pauses
//
// Enqueue fails whole with a *BacklogFullError when a spec that is ready
// at once would take its tenant's pending + waiting count over its
// Backlog. A job that has waited longer than MaxWait (measured from when
// it last entered StateWaiting) fails with an error naming ErrBacklogFull,
// at the next Lease after its deadline. Pause stops a scope until a time:
// a paused tenant or group admits nothing and its pending jobs move to
// waiting; a paused queue is skipped by Lease.
type TenantBackend interface {
	// SetTenant stores cfg as the tenant's own settings, or as the
	// defaults when tenant is empty, and applies it at once in the same
	// step: waiting jobs are released if the limit rose.
	SetTenant(ctx context.Context, tenant string, cfg queuetype.TenantConfig) error
	// Tenant returns the tenant's settings and job counts. A tenant never
	// seen is not an error: it has the defaults and no jobs.
	Tenant(ctx context.Context, tenant string) (*queuetype.TenantInfo, error)
	// SetAging sets the aging step of queue (0 turns aging off). It
	// applies to jobs that become ready afterwards.
	SetAging(ctx context.Context, queue string, step int) error
	// Pause stops scope starting jobs until now + d (keeping a later end
	// already in force) and returns the end; d <= 0 ends a pause at once.
	Pause(ctx context.Context, scope queuetype.Scope, d time.Duration) (time.Time, error)
}
