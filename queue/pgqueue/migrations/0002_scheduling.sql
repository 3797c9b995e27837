-- Tenant scheduling: limits, the fair order, pauses.

-- Why a waiting job waits: 'tenant' or 'group' (that scope has no room).
ALTER TABLE __schema__.jobs ADD COLUMN hold text NOT NULL DEFAULT '';
-- The fair order (backend.FairTag, backend.FairOrder): vstart is the start
-- tag, NULL until the job first becomes ready, and vfinish its tenant's
-- finish tag after it; ready jobs are taken by (band, vrank, id).
ALTER TABLE __schema__.jobs ADD COLUMN vstart bigint;
ALTER TABLE __schema__.jobs ADD COLUMN vfinish bigint;
ALTER TABLE __schema__.jobs ADD COLUMN band bigint NOT NULL DEFAULT 0;
ALTER TABLE __schema__.jobs ADD COLUMN vrank bigint NOT NULL DEFAULT 0;
-- When a waiting job fails for having waited too long; 0 = never.
ALTER TABLE __schema__.jobs ADD COLUMN wait_until bigint NOT NULL DEFAULT 0;

-- Jobs that were ready before this version keep their order: priority,
-- then sequence, ahead of later ones.
UPDATE __schema__.jobs SET vstart = 0, vfinish = 0, band = priority
	WHERE state IN ('pending', 'waiting', 'active', 'retrying');

DROP INDEX __schema__.jobs_ready;
-- Leasing: ready jobs of a queue in the fair order.
CREATE INDEX jobs_ready ON __schema__.jobs (queue, band, vrank, id) WHERE state = 'pending';
-- Whether a Lease needs the scheduler: ready or due jobs of a tenant.
CREATE INDEX jobs_scoped_ready ON __schema__.jobs (queue) WHERE state = 'pending' AND (tenant <> '' OR grp <> '');
CREATE INDEX jobs_scoped_due ON __schema__.jobs (queue, run_at)
	WHERE state IN ('scheduled', 'retrying') AND (tenant <> '' OR grp <> '');
-- A tenant's jobs by state, in the fair order: counting its admitted jobs
-- (at most its limit), releasing waiting ones, pausing.
CREATE INDEX jobs_tenant ON __schema__.jobs (tenant, state, band, vrank, id) WHERE tenant <> '';
-- Waiting jobs with a deadline.
CREATE INDEX jobs_wait_until ON __schema__.jobs (wait_until) WHERE state = 'waiting' AND wait_until > 0;
-- The fair tags are read from the jobs, not from counters every enqueue and
-- lease would have to lock: a queue's virtual time is the largest start tag
-- it has leased, a tenant's finish tag the largest its jobs took.
CREATE INDEX jobs_vtime ON __schema__.jobs (queue, vstart) WHERE started_at > 0;
CREATE INDEX jobs_vfinish ON __schema__.jobs (queue, tenant, vfinish) WHERE vfinish IS NOT NULL;

-- Per queue: the virtual time of deleted jobs, the aging step, a pause.
CREATE TABLE __schema__.queue_sched (
	queue        text PRIMARY KEY,
	vtime        bigint  NOT NULL DEFAULT 0,
	aging        integer NOT NULL DEFAULT 0,
	paused_until bigint  NOT NULL DEFAULT 0
);

-- Per queue and tenant: the finish tag of deleted jobs.
CREATE TABLE __schema__.fair_finish (
	queue  text   NOT NULL,
	tenant text   NOT NULL,
	finish bigint NOT NULL,
	PRIMARY KEY (queue, tenant)
);

-- Deleting jobs keeps the tags they held.
CREATE FUNCTION __schema__.keep_tags() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO __schema__.queue_sched AS s (queue, vtime)
		SELECT queue, max(vstart) FROM gone WHERE started_at > 0 AND vstart IS NOT NULL GROUP BY queue
		ON CONFLICT (queue) DO UPDATE SET vtime = greatest(s.vtime, excluded.vtime);
	INSERT INTO __schema__.fair_finish AS f (queue, tenant, finish)
		SELECT queue, tenant, max(vfinish) FROM gone WHERE vfinish IS NOT NULL GROUP BY queue, tenant
		ON CONFLICT (queue, tenant) DO UPDATE SET finish = greatest(f.finish, excluded.finish);
	RETURN NULL;
END $$;
CREATE TRIGGER jobs_keep_tags AFTER DELETE ON __schema__.jobs
	REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION __schema__.keep_tags();

-- The start tag of a job of tenant t becoming ready in queue q: the later
-- of the queue's virtual time and the tenant's finish tag.
CREATE FUNCTION __schema__.fair_start(q text, t text) RETURNS bigint LANGUAGE sql STABLE AS $$
	SELECT greatest(
		coalesce((SELECT vtime FROM __schema__.queue_sched WHERE queue = q), 0),
		coalesce((SELECT max(vstart) FROM __schema__.jobs WHERE queue = q AND started_at > 0), 0),
		coalesce((SELECT finish FROM __schema__.fair_finish WHERE queue = q AND tenant = t), 0),
		coalesce((SELECT max(vfinish) FROM __schema__.jobs WHERE queue = q AND tenant = t AND vfinish IS NOT NULL), 0))
$$;

CREATE FUNCTION __schema__.fair_aging(q text) RETURNS integer LANGUAGE sql STABLE AS $$
	SELECT coalesce((SELECT least(aging, 1000000) FROM __schema__.queue_sched WHERE queue = q), 0)
$$;

-- Tenant settings (0 = follow the defaults); the row of tenant '' holds
-- the defaults. wake_at is when a pause ends and its waiting jobs are to
-- be looked at again.
CREATE TABLE __schema__.tenants (
	tenant       text PRIMARY KEY,
	lim          integer NOT NULL DEFAULT 0,
	weight       integer NOT NULL DEFAULT 0,
	backlog      integer NOT NULL DEFAULT 0,
	max_wait     bigint  NOT NULL DEFAULT 0,
	paused_until bigint  NOT NULL DEFAULT 0,
	wake_at      bigint  NOT NULL DEFAULT 0
);
CREATE INDEX tenants_wake ON __schema__.tenants (wake_at) WHERE wake_at > 0;
