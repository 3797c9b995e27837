-- A parent retried by hand: its blocked children count their parents
-- afresh instead of one more. Counting one more counted a child of two
-- reopened parents twice for the second: the first parent's reopening had
-- already counted the second, still cancelled, as a parent not completed,
-- so the child never became ready.
DROP TRIGGER jobs_flow_reopen;

CREATE TRIGGER jobs_flow_reopen AFTER UPDATE OF state ON jobs
WHEN OLD.state IN ('failed', 'cancelled') AND NEW.state NOT IN ('completed', 'failed', 'cancelled')
	AND EXISTS (SELECT 1 FROM job_deps WHERE parent = NEW.id)
BEGIN
	UPDATE jobs SET
		deps_left = (SELECT count(*) FROM job_deps d JOIN jobs p ON p.id = d.parent
			WHERE d.child = jobs.id AND p.state != 'completed'
			AND NOT (d.run = 1 AND p.state IN ('failed', 'cancelled')))
	WHERE state = 'blocked' AND id IN (SELECT child FROM job_deps WHERE parent = NEW.id);
	UPDATE jobs SET state = 'blocked', finished_at = 0, updated_at = NEW.updated_at, cancelled_by = 0,
		last_error = '',
		deps_left = (SELECT count(*) FROM job_deps d JOIN jobs p ON p.id = d.parent
			WHERE d.child = jobs.id AND p.state != 'completed'
			AND NOT (d.run = 1 AND p.state IN ('failed', 'cancelled')))
	WHERE state = 'cancelled' AND cancelled_by = NEW.id
		AND id IN (SELECT child FROM job_deps WHERE parent = NEW.id)
		AND (grp = '' OR grp IN (SELECT id FROM job_groups WHERE done_at = 0 AND cancel_requested = 0));
END;
