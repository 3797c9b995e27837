package pgqueue

// fairUnit is backend.FairUnit as SQL text: the tag a weight-1 job takes.
const fairUnit = "1000"

// tagColNames are the fair-order columns a ready job is stored with.
const tagColNames = `vstart, vfinish, band, vrank`

// bandExpr and rankExpr are backend.FairOrder in SQL, for a job of
// priority prio with start tag s in a queue of aging step a.
func bandExpr(a, prio string) string {
	return `(CASE WHEN ` + a + ` > 0 THEN 0 ELSE ` + prio + ` END)::bigint`
}

func rankExpr(s, a, prio string) string {
	return `(CASE WHEN ` + a + ` > 0 THEN ` + s + ` + ` + prio + `::bigint * ` + a + `::bigint * ` + fairUnit +
		` ELSE ` + s + ` END)`
}

// tagValues are the values of tagColNames for a weight-1 job of start tag
// s (NULL: not ready yet, untagged).
func tagValues(s, a, prio string) string {
	return s + `, ` + s + ` + ` + fairUnit + `, ` + bandExpr(a, prio) + `, coalesce(` + rankExpr(s, a, prio) + `, 0)`
}

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
