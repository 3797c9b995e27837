-- Groups: limits, crawl delay, TTL, pause, completion, retention.

-- deadline is created_at + TTL until the TTL has been acted on; done_at is
-- set once, in the step that finished the group's last job; ended_at is
-- when its retention starts (done, and its completion job finished).
-- gone_* count the finished jobs the cleaner deleted, so a group's
-- progress outlives its jobs.
CREATE TABLE __schema__.job_groups (
	id                 text PRIMARY KEY,
	tenant             text    NOT NULL DEFAULT '',
	max_conc           integer NOT NULL DEFAULT 0,
	min_interval       bigint  NOT NULL DEFAULT 0,
	ttl                bigint  NOT NULL DEFAULT 0,
	deadline           bigint  NOT NULL DEFAULT 0,
	completion_kind    text    NOT NULL DEFAULT '',
	completion_queue   text    NOT NULL DEFAULT '',
	completion_payload bytea,
	webhook            text    NOT NULL DEFAULT '',
	created_at         bigint  NOT NULL,
	cancel_requested   boolean NOT NULL DEFAULT false,
	done_at            bigint  NOT NULL DEFAULT 0,
	ended_at           bigint  NOT NULL DEFAULT 0,
	completion_job     bigint  NOT NULL DEFAULT 0,
	last_start         bigint  NOT NULL DEFAULT 0,
	paused_until       bigint  NOT NULL DEFAULT 0,
	wake_at            bigint  NOT NULL DEFAULT 0,
	gone_completed     bigint  NOT NULL DEFAULT 0,
	gone_failed        bigint  NOT NULL DEFAULT 0,
	gone_cancelled     bigint  NOT NULL DEFAULT 0
);
CREATE INDEX job_groups_wake ON __schema__.job_groups (wake_at) WHERE wake_at > 0;
CREATE INDEX job_groups_deadline ON __schema__.job_groups (deadline) WHERE deadline > 0;
CREATE INDEX job_groups_ended ON __schema__.job_groups (ended_at) WHERE ended_at > 0;

-- Groups named by jobs stored before this version.
INSERT INTO __schema__.job_groups (id, created_at) SELECT DISTINCT grp, 0 FROM __schema__.jobs WHERE grp <> '';

-- A group's jobs by state, in the fair order: counting, releasing waiting
-- jobs, pausing, cancelling, and the cleaner's group path.
CREATE INDEX jobs_group ON __schema__.jobs (grp, state, band, vrank, id) WHERE grp <> '';
-- The cleaner: finished jobs of no group by finish time (a group's are
-- kept until the group ended and found through it).
CREATE INDEX jobs_finished_loose ON __schema__.jobs (state, finished_at)
	WHERE state IN ('completed', 'failed', 'cancelled') AND grp = '';

-- Deleting finished jobs of a group keeps their count in the group.
CREATE FUNCTION __schema__.keep_group_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE __schema__.job_groups g SET
		gone_completed = g.gone_completed + d.c, gone_failed = g.gone_failed + d.f, gone_cancelled = g.gone_cancelled + d.x
	FROM (SELECT grp, count(*) FILTER (WHERE state = 'completed') AS c, count(*) FILTER (WHERE state = 'failed') AS f,
			count(*) FILTER (WHERE state = 'cancelled') AS x
		FROM gone WHERE grp <> '' AND state IN ('completed', 'failed', 'cancelled') GROUP BY grp) d
	WHERE g.id = d.grp;
	RETURN NULL;
END $$;
CREATE TRIGGER jobs_keep_group_counts AFTER DELETE ON __schema__.jobs
	REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION __schema__.keep_group_counts();

-- The completion job of a group (unique key 'group:' and the group id, see
-- queue.CompletionJob) ends the group when it reaches a final state, and
-- opens it again if it leaves one (a retry by hand), whichever code made
-- the change. Other jobs pay only for the WHEN test.
CREATE FUNCTION __schema__.completion_ends_group() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE __schema__.job_groups SET ended_at = CASE WHEN NEW.state IN ('completed', 'failed', 'cancelled')
		THEN greatest(done_at, NEW.finished_at) ELSE 0 END
	WHERE id = substr(NEW.unique_key, 7) AND completion_job = NEW.id;
	RETURN NULL;
END $$;
CREATE TRIGGER jobs_completion_ends_group AFTER UPDATE OF state ON __schema__.jobs
	FOR EACH ROW WHEN (left(NEW.unique_key, 6) = 'group:'
		AND (NEW.state IN ('completed', 'failed', 'cancelled')) IS DISTINCT FROM (OLD.state IN ('completed', 'failed', 'cancelled')))
	EXECUTE FUNCTION __schema__.completion_ends_group();
