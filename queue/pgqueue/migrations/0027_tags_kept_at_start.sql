-- The fair tags of started jobs are kept by the lease that starts them
-- (keepStartTags in schedsql.go): the queue's virtual time in
-- queue_sched.vtime, the tenant's finish tag in fair_finish. Only jobs
-- not started yet keep their finish tag in an index, so a job no longer
-- takes entries in jobs_vtime and jobs_vfinish on its lease and again on
-- its end: four index entries of fourteen per job.

-- The tags of the jobs started so far go into the rows first.
INSERT INTO __schema__.queue_sched AS s (queue, vtime)
	SELECT queue, max(vstart) FROM __schema__.jobs WHERE started_at > 0 AND vstart IS NOT NULL GROUP BY queue
	ON CONFLICT (queue) DO UPDATE SET vtime = greatest(s.vtime, excluded.vtime);
INSERT INTO __schema__.fair_finish AS f (queue, tenant, finish)
	SELECT queue, tenant, max(vfinish) FROM __schema__.jobs WHERE started_at > 0 AND vfinish IS NOT NULL
	GROUP BY queue, tenant
	ON CONFLICT (queue, tenant) DO UPDATE SET finish = greatest(f.finish, excluded.finish);

DROP INDEX IF EXISTS __schema__.jobs_vtime;
DROP INDEX IF EXISTS __schema__.jobs_vfinish;
CREATE INDEX jobs_vfinish ON __schema__.jobs (queue, tenant, vfinish) WHERE vfinish IS NOT NULL AND started_at = 0;

CREATE OR REPLACE FUNCTION __schema__.fair_start(q text, t text) RETURNS bigint LANGUAGE sql STABLE AS $$
	SELECT greatest(
		coalesce((SELECT vtime FROM __schema__.queue_sched WHERE queue = q), 0),
		coalesce((SELECT finish FROM __schema__.fair_finish WHERE queue = q AND tenant = t), 0),
		coalesce((SELECT vfinish FROM __schema__.jobs WHERE queue = q AND tenant = t AND vfinish IS NOT NULL
			AND started_at = 0 ORDER BY vfinish DESC LIMIT 1), 0))
$$;

-- Deleting jobs keeps the finish tags of those never started; a started
-- job's tags are in the rows already.
CREATE OR REPLACE FUNCTION __schema__.keep_tags() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO __schema__.fair_finish AS f (queue, tenant, finish)
		SELECT queue, tenant, max(vfinish) FROM gone WHERE vfinish IS NOT NULL AND started_at = 0
		GROUP BY queue, tenant ORDER BY queue, tenant
		ON CONFLICT (queue, tenant) DO UPDATE SET finish = greatest(f.finish, excluded.finish);
	RETURN NULL;
END $$;
