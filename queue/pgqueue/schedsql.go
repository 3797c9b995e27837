package pgqueue

import "github.com/sluicehq/sluice/queue/sqlstore"

// The fair-order rule in SQL, from sqlstore (built from the Go rule's
// constants).
var (
	fairUnit  = sqlstore.FairUnitSQL
	bandExpr  = sqlstore.FairBandSQL
	rankExpr  = sqlstore.FairRankSQL
	tagValues = sqlstore.FairTagsSQL
)

// tagColNames are the fair-order columns a ready job is stored with.
const tagColNames = `vstart, vfinish, band, vrank`

// schedNeeded is the SQL test of whether a Lease of the queues matching
// queueCond at time now must run the scheduler (leaseSched) instead of
// the plain lease: a job of a tenant or group is ready or due there, a
// tenant's or group's wake, a waiting job's MaxWait or a group's TTL has
// come, or a queue is paused.
// Each test is one probe of a partial index that holds only such rows, so
// a store without tenants pays a few empty lookups.
func schedNeeded(queueCond, now string) string {
	return `(EXISTS (SELECT 1 FROM __schema__.jobs WHERE state = 'pending' AND (tenant <> '' OR grp <> '') AND ` + queueCond + `)
		OR EXISTS (SELECT 1 FROM __schema__.jobs WHERE state IN ('scheduled', 'retrying') AND (tenant <> '' OR grp <> '')
			AND ` + queueCond + ` AND run_at <= ` + now + `)
		OR EXISTS (SELECT 1 FROM __schema__.tenants WHERE wake_at > 0 AND wake_at <= ` + now + `)
		OR EXISTS (SELECT 1 FROM __schema__.jobs WHERE state = 'waiting' AND wait_until > 0 AND wait_until <= ` + now + `)
		OR EXISTS (SELECT 1 FROM __schema__.queue_sched WHERE paused_until > ` + now + ` AND ` + queueCond + `)
		OR EXISTS (SELECT 1 FROM __schema__.job_groups WHERE wake_at > 0 AND wake_at <= ` + now + `)
		OR EXISTS (SELECT 1 FROM __schema__.job_groups WHERE deadline > 0 AND deadline <= ` + now + `))`
}

// pickedColNames are the columns of the jobs a lease picks: the id, and
// what keepStartTags reads. The tags do not change while the lease holds
// the row's lock.
var pickedColNames = []string{"id", "queue", "tenant", "vstart", "vfinish"}

// pickedCols lists pickedColNames, qualified by alias unless it is empty.
func pickedCols(alias string) string { return sqlstore.ColList(alias, pickedColNames) }

// keepStartTags is the pair of CTEs by which a lease keeps the fair tags
// of the jobs it starts (CTE l, of at least pickedCols): its queue's
// virtual time is the largest start tag leased, and a tenant's finish tag
// includes every finish tag of its started jobs (fair_start reads the
// rest from the jobs not started yet). Kept once per lease in a row per
// queue and per tenant, not read from the started jobs themselves: an
// index of those took two entries per job on its lease and two on its
// end. The rows are taken in key order, so leases of several queues or
// tenants lock them in one order.
func keepStartTags(l string) string {
	return `v AS (INSERT INTO __schema__.queue_sched AS s (queue, vtime)
			SELECT queue, max(vstart) FROM ` + l + ` WHERE vstart IS NOT NULL GROUP BY queue ORDER BY queue
			ON CONFLICT (queue) DO UPDATE SET vtime = excluded.vtime WHERE excluded.vtime > s.vtime),
		f AS (INSERT INTO __schema__.fair_finish AS f (queue, tenant, finish)
			SELECT queue, tenant, max(vfinish) FROM ` + l + ` WHERE vfinish IS NOT NULL GROUP BY queue, tenant ORDER BY queue, tenant
			ON CONFLICT (queue, tenant) DO UPDATE SET finish = excluded.finish WHERE excluded.finish > f.finish)`
}
