-- A group's jobs are kept until the group has ended: it is done and its
-- completion job, when it has one, has finished. Their retention and the
-- group's start then, at ended_at (0 while the group has not ended).

ALTER TABLE job_groups ADD COLUMN ended_at INTEGER NOT NULL DEFAULT 0;

-- Groups done before this version: ended when done, or when their
-- completion job finished; not yet while it has not.
UPDATE job_groups SET ended_at = CASE
	WHEN completion_job = 0 THEN done_at
	WHEN EXISTS (SELECT 1 FROM jobs WHERE jobs.id = job_groups.completion_job
		AND jobs.state NOT IN ('completed', 'failed', 'cancelled')) THEN 0
	ELSE max(done_at, coalesce((SELECT finished_at FROM jobs WHERE jobs.id = job_groups.completion_job), 0))
	END
WHERE done_at > 0;

-- Finished jobs whose group was deleted before them get their group back,
-- ended when the last of them finished, so the cleaner's group path
-- deletes them and then the group.
INSERT INTO job_groups (id, created_at, done_at, ended_at)
	SELECT grp, 0, max(finished_at), max(finished_at) FROM jobs
	WHERE grp != '' AND NOT EXISTS (SELECT 1 FROM job_groups WHERE job_groups.id = jobs.grp)
	GROUP BY grp;

DROP INDEX job_groups_done;
-- The cleaner: groups by the end of their retention's start.
CREATE INDEX job_groups_ended ON job_groups (ended_at) WHERE ended_at > 0;

-- The cleaner: finished jobs of no group by finish time. A query uses it
-- only when it repeats both terms (see Cleanup); a group's jobs are found
-- through their group (jobs_group).
DROP INDEX jobs_finished;
CREATE INDEX jobs_finished ON jobs (state, finished_at)
	WHERE state IN ('completed', 'failed', 'cancelled') AND grp = '';

-- The completion job of a group (its unique key is 'group:' and the group
-- id, see queue.CompletionJob) ends the group when it reaches a final
-- state, and opens it again if it leaves one (a retry by hand). The group
-- row is found by its key, so other jobs pay only for the WHEN test.
CREATE TRIGGER jobs_completion_ends_group AFTER UPDATE OF state ON jobs
WHEN substr(NEW.unique_key, 1, 6) = 'group:'
	AND (NEW.state IN ('completed', 'failed', 'cancelled')) != (OLD.state IN ('completed', 'failed', 'cancelled'))
BEGIN
	UPDATE job_groups SET ended_at = CASE WHEN NEW.state IN ('completed', 'failed', 'cancelled')
		THEN max(done_at, NEW.finished_at) ELSE 0 END
	WHERE id = substr(NEW.unique_key, 7) AND completion_job = NEW.id;
END;
