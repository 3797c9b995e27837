-- Tenant and group scheduling: limits, the fair order, groups.

-- Why a waiting job waits: 'tenant' or 'group' (that scope has no room).
ALTER TABLE jobs ADD COLUMN hold TEXT NOT NULL DEFAULT '';
-- The fair order (queue.FairTag, queue.FairOrder): vstart is the start
-- tag, NULL until the job first becomes ready; ready jobs are taken by
-- (band, vrank, id).
ALTER TABLE jobs ADD COLUMN vstart INTEGER;
ALTER TABLE jobs ADD COLUMN band INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN vrank INTEGER NOT NULL DEFAULT 0;
-- When a waiting job fails for having waited too long; 0 = never.
ALTER TABLE jobs ADD COLUMN wait_until INTEGER NOT NULL DEFAULT 0;

-- Jobs that were ready before this version keep their order: priority,
-- then sequence, ahead of later ones.
UPDATE jobs SET vstart = 0, band = priority WHERE state IN ('pending', 'waiting', 'active', 'retrying');

DROP INDEX jobs_ready;
-- Leasing: ready jobs of a queue in the fair order.
CREATE INDEX jobs_fair ON jobs (queue, band, vrank, id) WHERE state = 'pending';
-- A tenant's and a group's jobs by state, in the fair order: releasing
-- waiting jobs, pausing, cancelling a group.
CREATE INDEX jobs_tenant ON jobs (tenant, state, band, vrank, id) WHERE tenant != '';
CREATE INDEX jobs_group ON jobs (grp, state, band, vrank, id) WHERE grp != '';
-- Waiting jobs with a deadline.
CREATE INDEX jobs_wait_until ON jobs (wait_until) WHERE state = 'waiting' AND wait_until > 0;

-- Per queue: the virtual time V, the aging step, a pause.
CREATE TABLE queue_sched (
	queue        TEXT PRIMARY KEY,
	vtime        INTEGER NOT NULL DEFAULT 0,
	aging        INTEGER NOT NULL DEFAULT 0,
	paused_until INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Per queue and tenant: the finish tag F.
CREATE TABLE fair_finish (
	queue  TEXT NOT NULL,
	tenant TEXT NOT NULL,
	finish INTEGER NOT NULL,
	PRIMARY KEY (queue, tenant)
) WITHOUT ROWID;

-- Tenant settings (0 = follow the defaults); the row of tenant '' holds
-- the defaults (jobs without a tenant have no limits). wake_at is when a
-- pause ends and its waiting jobs are to be looked at again.
CREATE TABLE tenants (
	tenant       TEXT PRIMARY KEY,
	lim          INTEGER NOT NULL DEFAULT 0,
	weight       INTEGER NOT NULL DEFAULT 0,
	backlog      INTEGER NOT NULL DEFAULT 0,
	max_wait     INTEGER NOT NULL DEFAULT 0,
	paused_until INTEGER NOT NULL DEFAULT 0,
	wake_at      INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX tenants_wake ON tenants (wake_at) WHERE wake_at > 0;

-- Groups. deadline is created_at + TTL until the TTL has been acted on;
-- done_at is set once, in the step that finished the group's last job.
CREATE TABLE job_groups (
	id                 TEXT PRIMARY KEY,
	tenant             TEXT    NOT NULL DEFAULT '',
	max_conc           INTEGER NOT NULL DEFAULT 0,
	min_interval       INTEGER NOT NULL DEFAULT 0,
	ttl                INTEGER NOT NULL DEFAULT 0,
	deadline           INTEGER NOT NULL DEFAULT 0,
	completion_kind    TEXT    NOT NULL DEFAULT '',
	completion_queue   TEXT    NOT NULL DEFAULT '',
	completion_payload BLOB,
	created_at         INTEGER NOT NULL,
	cancel_requested   INTEGER NOT NULL DEFAULT 0,
	done_at            INTEGER NOT NULL DEFAULT 0,
	completion_job     INTEGER NOT NULL DEFAULT 0,
	last_start         INTEGER NOT NULL DEFAULT 0,
	paused_until       INTEGER NOT NULL DEFAULT 0,
	wake_at            INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX job_groups_wake ON job_groups (wake_at) WHERE wake_at > 0;
CREATE INDEX job_groups_deadline ON job_groups (deadline) WHERE deadline > 0;
CREATE INDEX job_groups_done ON job_groups (done_at) WHERE done_at > 0;

-- Jobs per tenant ('t') and group ('g') and state, kept by the triggers
-- below in the same statement as every change of a job's state, so the
-- counts cannot drift from the jobs. Tenants count unfinished states only;
-- groups count every state and keep counting finished jobs the cleaner
-- deletes, so a group's progress outlives the jobs' retention.
CREATE TABLE scope_counts (
	kind  TEXT    NOT NULL,
	name  TEXT    NOT NULL,
	state TEXT    NOT NULL,
	n     INTEGER NOT NULL,
	PRIMARY KEY (kind, name, state)
) WITHOUT ROWID;

INSERT INTO scope_counts (kind, name, state, n)
	SELECT 't', tenant, state, count(*) FROM jobs
	WHERE tenant != '' AND state NOT IN ('completed', 'failed', 'cancelled') GROUP BY tenant, state;
INSERT INTO scope_counts (kind, name, state, n)
	SELECT 'g', grp, state, count(*) FROM jobs WHERE grp != '' GROUP BY grp, state;
INSERT INTO job_groups (id, created_at) SELECT DISTINCT grp, 0 FROM jobs WHERE grp != '';

CREATE TRIGGER jobs_count_tenant_insert AFTER INSERT ON jobs
WHEN NEW.tenant != '' AND NEW.state NOT IN ('completed', 'failed', 'cancelled') BEGIN
	INSERT INTO scope_counts (kind, name, state, n) VALUES ('t', NEW.tenant, NEW.state, 1)
		ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER jobs_count_group_insert AFTER INSERT ON jobs
WHEN NEW.grp != '' BEGIN
	INSERT INTO scope_counts (kind, name, state, n) VALUES ('g', NEW.grp, NEW.state, 1)
		ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER jobs_count_tenant_update AFTER UPDATE OF state ON jobs
WHEN OLD.state != NEW.state AND NEW.tenant != '' BEGIN
	UPDATE scope_counts SET n = n - 1 WHERE kind = 't' AND name = OLD.tenant AND state = OLD.state;
	INSERT INTO scope_counts (kind, name, state, n)
		SELECT 't', NEW.tenant, NEW.state, 1 WHERE NEW.state NOT IN ('completed', 'failed', 'cancelled')
		ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER jobs_count_group_update AFTER UPDATE OF state ON jobs
WHEN OLD.state != NEW.state AND NEW.grp != '' BEGIN
	UPDATE scope_counts SET n = n - 1 WHERE kind = 'g' AND name = OLD.grp AND state = OLD.state;
	INSERT INTO scope_counts (kind, name, state, n) VALUES ('g', NEW.grp, NEW.state, 1)
		ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs
WHEN (OLD.tenant != '' OR OLD.grp != '') AND OLD.state NOT IN ('completed', 'failed', 'cancelled') BEGIN
	UPDATE scope_counts SET n = n - 1 WHERE kind = 't' AND name = OLD.tenant AND state = OLD.state;
	UPDATE scope_counts SET n = n - 1 WHERE kind = 'g' AND name = OLD.grp AND state = OLD.state;
END;
