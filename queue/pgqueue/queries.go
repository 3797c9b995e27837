package pgqueue

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/sluicehq/sluice/queue/sqlstore"
)

// clearLease is the SET part shared by every transition out of active.
const clearLease = `lease_token = NULL, lease_until = NULL, worker_id = NULL`

// finalStates is the SQL list of the final states.
const finalStates = `('completed', 'failed', 'cancelled')`

// queries holds the statements of one schema, qualified once at Open.
// pgx prepares and caches each text per connection on first use, so a
// hot statement is parsed and planned once per connection.
type queries struct {
	channel string // the NOTIFY channel of the schema

	insertOne, insertMany, findUnique, notify, notifyMany string

	promoteOne, promoteMany, leaseOne, leaseMany, quickOne, quickMany, gateOne, gateMany string

	extend, complete, completeMany, exists, holder, fail, giveBack string

	get, cancel, stats, rescueSelect, rescueUpdate, cleanup, cleanupAll string

	retryRow, retryReset, retryParent string

	scopes string
}

func newQueries(schema string) *queries {
	q := func(text string) string { return qualify(text, schema) }
	insertCols := `queue, kind, payload, tenant, grp, priority, run_at, max_attempts, timeout,
		state, webhook, trace, created_at, updated_at`
	// Promotion takes the due jobs without tenant or group (the scheduler
	// places the others); one ready for the first time gets its start tag,
	// consecutive ones per queue in (run_at, id) order. It stops at the
	// first due job of a tenant or group: a job ready for the first time
	// takes the queue's next tag, so the scheduler places that job and
	// the plain ones after it in the same order (promoteDue).
	// The start and aging look-ups are made once per queue (k), not once
	// per due job.
	promote := `WITH d AS MATERIALIZED (SELECT id, queue, run_at, vstart FROM __schema__.jobs p
				WHERE state IN ('scheduled', 'retrying') AND %s AND run_at <= $2 AND tenant = '' AND grp = ''
				AND NOT EXISTS (SELECT 1 FROM __schema__.jobs s WHERE s.queue = p.queue
					AND s.state IN ('scheduled', 'retrying') AND (s.tenant <> '' OR s.grp <> '')
					AND (s.run_at, s.id) < (p.run_at, p.id))
				ORDER BY run_at, id LIMIT 1000 FOR UPDATE SKIP LOCKED),
			k AS MATERIALIZED (SELECT q.queue, __schema__.fair_aging(q.queue) AS a,
					CASE WHEN q.fresh THEN __schema__.fair_start(q.queue, '') END AS fs
				FROM (SELECT queue, bool_or(vstart IS NULL) AS fresh FROM d GROUP BY queue) q)
		UPDATE __schema__.jobs j SET state = 'pending', updated_at = $2,
			vstart = coalesce(j.vstart, t.s), vfinish = coalesce(j.vfinish, t.s + ` + fairUnit + `),
			band = CASE WHEN j.vstart IS NULL THEN ` + bandExpr("t.a", "j.priority") + ` ELSE j.band END,
			vrank = CASE WHEN j.vstart IS NULL THEN ` + rankExpr("t.s", "t.a", "j.priority") + ` ELSE j.vrank END
		FROM (SELECT d.id, k.a, CASE WHEN d.vstart IS NULL THEN k.fs + ` + fairUnit + ` * (count(*) FILTER (WHERE d.vstart IS NULL)
					OVER (PARTITION BY d.queue ORDER BY d.run_at, d.id) - 1) END AS s
			FROM d JOIN k ON k.queue = d.queue) t
		WHERE j.id = t.id`
	// The ready jobs a lease takes (%s: the queue condition).
	pickOne := func(extra string) string {
		return `SELECT ` + pickedCols("") + ` FROM __schema__.jobs WHERE state = 'pending' AND %s AND NOT ` + schedNeeded("%s", "$6") + extra + `
			ORDER BY band, vrank, id LIMIT $2 FOR UPDATE SKIP LOCKED`
	}
	// A lease of several queues takes the first of each queue from its
	// ordered index, then the first of those: one index scan a queue
	// ending at the limit. Read as one scan of queue = ANY($1), no index
	// holds the jobs in the lease's order across queues, and the planner
	// read every ready job of the queues and sorted them (16 ms a lease
	// with 40,000 ready). Rows a queue locked and the merge left are free
	// again when the lease commits.
	pickAny := func(extra string) string {
		return `SELECT ` + pickedCols("c") + ` FROM unnest($1::text[]) AS u(q) CROSS JOIN LATERAL (
				SELECT ` + pickedCols("") + `, band, vrank FROM __schema__.jobs WHERE state = 'pending' AND queue = u.q AND NOT ` + schedNeeded("%s", "$6") + extra + `
				ORDER BY band, vrank, id LIMIT $2 FOR UPDATE SKIP LOCKED) c
			ORDER BY c.band, c.vrank, c.id LIMIT $2`
	}
	// The lease updates the jobs it picked by their ids (id = ANY), not by
	// joining them: its plan is made once per connection and cannot know
	// how many jobs LIMIT $2 keeps, and on fresh statistics of a big table
	// it joined the picked jobs by hashing every job of the table, so each
	// lease read them all (TestLeaseReadsInOrderWithStaleStatistics).
	// The quick lease (Lease) takes ready jobs only while none of the
	// queues' timed jobs is due, so that it needs no promotion first.
	noneDue := ` AND NOT EXISTS (SELECT 1 FROM __schema__.jobs WHERE state IN ('scheduled', 'retrying') AND %s AND run_at <= $6)`
	lease := func(pick, queueCond string) string {
		return strings.ReplaceAll(`WITH picked AS (`+pick+`), `+keepStartTags("picked")+`
		UPDATE __schema__.jobs j SET state = 'active', attempt = j.attempt + 1,
			lease_token = $3 || '.' || j.id, lease_until = $4, worker_id = $5, started_at = $6, updated_at = $6
		WHERE j.id = ANY(ARRAY(SELECT id FROM picked))
		RETURNING `+sqlstore.JobCols("j")+`, j.lease_token, j.band, j.vrank`, "%s", queueCond)
	}
	return &queries{
		channel: channelName(schema),
		insertOne: q(`INSERT INTO __schema__.jobs (` + insertCols + `, unique_key, unique_until, ` + tagColNames + `)
			SELECT $1::text, $2::text, $3::bytea, $4::text, $5::text, $6::int, $7::bigint, $8::int, $9::bigint,
				$10::text, $11::text, $12::text, $13::bigint, $13::bigint, $14::text, $15::bigint, ` + tagValues("t.s", "t.a", "$6::int") + `
			FROM (SELECT CASE WHEN $10::text = 'pending' THEN __schema__.fair_start($1::text, $4::text) END AS s,
				__schema__.fair_aging($1::text) AS a OFFSET 0) t RETURNING id`),
		// The rows go in in the order given (ORDER BY ord), so their ids
		// rise in that order too; Enqueue sorts the returned ids.
		// A batch's ready jobs of one queue take consecutive start tags.
		// The start and aging look-ups are made once per queue and tenant
		// of the batch, not once per row: they read the same snapshot.
		// Both statements keep the look-ups in a subquery the planner may
		// not merge into the rest (insertOne's OFFSET 0, insertMany's
		// MATERIALIZED): merged, each use of the tag became a look-up of
		// its own, three for one job, one a row for a batch, most of a
		// batch's time.
		insertMany: q(`WITH u AS (SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::text[], $5::text[], $6::int[],
				$7::bigint[], $8::int[], $9::bigint[], $10::text[], $11::text[], $12::text[])
				WITH ORDINALITY AS u(queue, kind, payload, tenant, grp, priority, run_at, max_attempts,
					timeout, state, webhook, trace, ord)),
			k AS MATERIALIZED (SELECT d.queue, d.tenant, CASE WHEN d.ready THEN __schema__.fair_start(d.queue, d.tenant) END AS fs,
					__schema__.fair_aging(d.queue) AS a
				FROM (SELECT queue, tenant, bool_or(state = 'pending') AS ready FROM u GROUP BY queue, tenant) d)
			INSERT INTO __schema__.jobs (` + insertCols + `, ` + tagColNames + `)
			SELECT u.queue, u.kind, u.payload, u.tenant, u.grp, u.priority, u.run_at, u.max_attempts,
				u.timeout, u.state, u.webhook, u.trace, $13, $13, ` + tagValues("u.s", "u.a", "u.priority") + `
			FROM (SELECT u.*, CASE WHEN u.state = 'pending' THEN k.fs +
					` + fairUnit + ` * (count(*) FILTER (WHERE u.state = 'pending') OVER (PARTITION BY u.queue ORDER BY u.ord) - 1) END AS s,
					k.a
				FROM u JOIN k ON k.queue = u.queue AND k.tenant = u.tenant) u
			ORDER BY u.ord RETURNING id`),
		// The key is held by a job whose window has not ended, or, without
		// a window, by a job that has not finished.
		findUnique: q(`SELECT ` + sqlstore.JobCols("") + ` FROM __schema__.jobs
			WHERE queue = $1 AND unique_key = $2
			AND ((unique_until IS NULL AND state NOT IN ` + finalStates + `) OR unique_until > $3)
			ORDER BY id DESC LIMIT 1`),
		notify: `SELECT pg_notify($1, $2)`,
		// One transaction, so one commit, for every queue.
		notifyMany: `SELECT pg_notify($1, q || chr(31) || $3) FROM unnest($2::text[]) AS q`,

		promoteOne:  q(sprintf(promote, "queue = $1")),
		promoteMany: q(sprintf(promote, "queue = ANY($1)")),
		leaseOne:    q(lease(pickOne(""), "queue = $1")),
		leaseMany:   q(lease(pickAny(""), "queue = ANY($1)")),
		quickOne:    q(lease(pickOne(noneDue), "queue = $1")),
		quickMany:   q(lease(pickAny(noneDue), "queue = ANY($1)")),
		gateOne:     q(`SELECT ` + schedNeeded("queue = $1", "$2")),
		gateMany:    q(`SELECT ` + schedNeeded("queue = ANY($1)", "$2")),

		// The plain transitions below match only jobs of no tenant nor group
		// that are no job's parent: a parent ends in a transaction of its own
		// (the scheduler's path), since its end locks its children (see
		// migrations/0021_flows.sql) and a shared batch locking several
		// parents' children could deadlock with another.
		extend: q(`UPDATE __schema__.jobs SET lease_until = $1, updated_at = $2
			WHERE id = $3 AND state = 'active' AND lease_token = $4 RETURNING lease_until, cancel_requested`),
		complete: q(`UPDATE __schema__.jobs SET state = 'completed', result = $1, finished_at = $2, updated_at = $2, ` + clearLease + `
			WHERE id = $3 AND state = 'active' AND lease_token = $4 AND tenant = '' AND grp = '' AND NOT has_children`),
		// A batch's fence is the token alone: only an active job holds one
		// (the jobs_valid constraint). With j.state = 'active' in the WHERE
		// the planner, told by statistics taken on a queue of ready jobs
		// that few are active, read the batch through jobs_lease and
		// visited every finished job whose dead entry it still held: 272
		// heap pages for a batch of 5 on a queue draining at concurrency
		// 10. It reads the batch's rows by id (id = ANY) and matches them
		// to their tokens and results in a hash join, the one plan
		// completeConfig leaves, whatever the statistics
		// (TestCompleteManyReadsByID).
		completeMany: q(`UPDATE __schema__.jobs j SET state = 'completed', result = u.result,
				finished_at = $4, updated_at = $4, ` + clearLease + `
			FROM unnest($1::bigint[], $2::text[], $3::bytea[]) AS u(id, token, result)
			WHERE j.id = ANY($1::bigint[]) AND j.id = u.id AND j.lease_token = u.token AND j.tenant = '' AND j.grp = ''
				AND NOT j.has_children
			RETURNING j.id`),
		exists: q(`SELECT EXISTS (SELECT 1 FROM __schema__.jobs WHERE id = $1)`),
		holder: q(`SELECT attempt, max_attempts, cancel_requested, errors, queue FROM __schema__.jobs
			WHERE id = $1 AND state = 'active' AND lease_token = $2 FOR UPDATE`),
		fail: q(`UPDATE __schema__.jobs SET state = $1, last_error = $2, errors = $3,
			run_at = CASE WHEN $4::bigint = 0 THEN run_at ELSE $4::bigint END, finished_at = $5, updated_at = $6, ` + clearLease + `
			WHERE id = $7 AND state = 'active' AND lease_token = $8 RETURNING 1`),
		giveBack: q(`UPDATE __schema__.jobs SET
			state = CASE WHEN cancel_requested THEN 'cancelled' ELSE $1::text END,
			finished_at = CASE WHEN cancel_requested THEN $2::bigint ELSE 0 END,
			run_at = CASE WHEN cancel_requested THEN run_at ELSE $3::bigint END,
			attempt = attempt - 1, updated_at = $2, ` + clearLease + `
			WHERE id = $4 AND state = 'active' AND lease_token = $5 AND tenant = '' AND grp = '' AND NOT has_children
			RETURNING state, queue`),

		get: q(`SELECT ` + sqlstore.JobCols("") + ` FROM __schema__.jobs WHERE id = $1`),
		// Every expression reads the row as it was, so the order of the SET
		// items does not matter; a row changed meanwhile is read again
		// after its lock (READ COMMITTED), so the state decided on is the
		// latest one.
		cancel: q(`UPDATE __schema__.jobs SET
			cancel_requested = cancel_requested OR state = 'active',
			finished_at = CASE WHEN state = 'active' THEN finished_at ELSE $2::bigint END,
			state = CASE WHEN state = 'active' THEN state ELSE 'cancelled' END,
			updated_at = $2
			WHERE id = $1 AND state NOT IN ` + finalStates + ` RETURNING ` + sqlstore.JobCols("")),
		stats: q(`SELECT queue, state, count(*) FROM __schema__.jobs GROUP BY queue, state`),
		rescueSelect: q(`SELECT ` + sqlstore.JobCols("") + ` FROM __schema__.jobs WHERE state = 'active' AND lease_until < $1
			AND (cardinality($2::text[]) = 0 OR queue = ANY($2)) ORDER BY lease_until LIMIT $3 FOR UPDATE SKIP LOCKED`),
		rescueUpdate: q(`UPDATE __schema__.jobs SET state = $1, stalls = stalls + 1, attempt = attempt - 1,
			last_error = CASE WHEN $2::text = '' THEN last_error ELSE $2::text END,
			errors = CASE WHEN $3::text = '' THEN errors ELSE $3::text END,
			finished_at = $4, updated_at = $5, ` + clearLease + `
			WHERE id = $6 AND state = 'active' AND lease_until < $5 RETURNING state`),
		cleanup: q(`DELETE FROM __schema__.jobs WHERE id IN (SELECT id FROM __schema__.jobs
			WHERE state IN ` + finalStates + ` AND grp = '' AND state = $1 AND finished_at <= $2 AND queue = ANY($3)
			ORDER BY finished_at LIMIT $4 FOR UPDATE SKIP LOCKED)`),
		cleanupAll: q(`DELETE FROM __schema__.jobs WHERE id IN (SELECT id FROM __schema__.jobs
			WHERE state IN ` + finalStates + ` AND grp = '' AND state = $1 AND finished_at <= $2
			ORDER BY finished_at LIMIT $3 FOR UPDATE SKIP LOCKED)`),

		scopes: q(`SELECT tenant, grp, has_children FROM __schema__.jobs WHERE id = $1`),
		retryRow: q(`SELECT queue, state, grp, unique_key, tenant, priority, vstart IS NOT NULL
			FROM __schema__.jobs WHERE id = $1 FOR UPDATE`),
		// The job keeps its state here; place moves it to pending or
		// waiting, with its first fair tag if it never had one, so the
		// state changes once and the state triggers fire once.
		// A parent that holds the job back: one not completed, unless it
		// ended and the job runs anyway; an ended one first, the way to
		// bring the job back being to retry it. A completed parent stays
		// completed, so reading the parents without locking them is safe.
		retryParent: q(`SELECT p.id, p.state FROM __schema__.job_deps d
			JOIN __schema__.jobs p ON p.id = d.parent JOIN __schema__.jobs c ON c.id = d.child
			WHERE d.child = $1 AND p.state <> 'completed'
			AND NOT (c.on_parent_failure = 'run' AND p.state IN ('failed', 'cancelled'))
			ORDER BY p.state IN ('failed', 'cancelled') DESC, p.id LIMIT 1`),
		retryReset: q(`UPDATE __schema__.jobs SET attempt = 0, stalls = 0, result = NULL,
			cancel_requested = false, finished_at = 0, run_at = $1, updated_at = $1, ` + clearLease + `
			WHERE id = $2 AND state = $3`),
	}
}

// channelName is the NOTIFY channel of schema (and of the SQL function
// notify_channel, migrations/0021_flows.sql): stores in different
// schemas of one database wake only their own workers. Postgres bounds a
// channel name to 63 bytes; a longer one is a digest of the schema.
func channelName(schema string) string {
	name := "sluice_jobs." + schema
	if len(name) <= maxIdentLen {
		return name
	}
	sum := sha256.Sum256([]byte(schema))
	return "sluice_jobs." + hex.EncodeToString(sum[:16])
}

// sprintf puts s in place of the one %s of format.
func sprintf(format, s string) string { return strings.Replace(format, "%s", s, 1) }
