-- Flows: jobs that wait for other jobs (queue.JobSpec.DependsOn,
-- queue.Client.EnqueueFlow).

-- A new state, blocked: waiting for parents. SQLite cannot alter a CHECK
-- constraint, and rebuilding the jobs table would copy every job; the
-- wider list changes nothing on disk (every stored row satisfies it), the
-- case for which SQLite's documentation allows editing the schema text.
-- The ALTER TABLE below bumps the schema cookie, so every connection
-- reloads the schema.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, '''retrying'',', '''retrying'',''blocked'',')
	WHERE type = 'table' AND name = 'jobs' AND instr(sql, '''blocked''') = 0;
PRAGMA writable_schema = OFF;

-- flow and flow_node: the flow the job belongs to and its name there.
-- depends_on: its parents' ids, comma-separated, as given (never changes).
-- deps_left: while blocked, its parents that have not yet ended (or
-- completed, for a job that is cancelled when a parent fails).
-- cancelled_by: the parent whose end cancelled it, so that a retry of that
-- parent by hand puts it back to blocked.
ALTER TABLE jobs ADD COLUMN flow TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN flow_node TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN depends_on TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN on_parent_failure TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN deps_left INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN cancelled_by INTEGER NOT NULL DEFAULT 0;

CREATE INDEX jobs_flow ON jobs (flow, id) WHERE flow != '';

-- The edges: child waits for parent. run is 1 when the child runs even if
-- the parent fails (OnParentFailure "run").
CREATE TABLE job_deps (
	parent INTEGER NOT NULL,
	child  INTEGER NOT NULL,
	run    INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (parent, child)
) WITHOUT ROWID;
CREATE INDEX job_deps_child ON job_deps (child, parent);

CREATE TABLE flows (
	id         TEXT PRIMARY KEY,
	name       TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Jobs of a group moved by the triggers below, for the write that moved
-- them to settle their groups (a group whose last job a cascade
-- cancelled completes in that same write).
CREATE TABLE flow_moved (id INTEGER PRIMARY KEY);

-- A parent that ends settles its blocked children, in the statement that
-- ended it, whatever the transition (Complete, Fail, Cancel, a rescue, a
-- tenant's MaxWait): on failure or cancellation the children that follow
-- it are cancelled (their own children settle in turn: the connection has
-- recursive_triggers on); then every blocked child counts one parent
-- fewer, and one with none left is released as scheduled at now, which
-- the next Lease promotes like any due job (fair tag, tenant and group
-- room). now is the parent's updated_at, written by the transition from
-- the backend's clock.
CREATE TRIGGER jobs_flow_settle AFTER UPDATE OF state ON jobs
WHEN NEW.state IN ('completed', 'failed', 'cancelled') AND OLD.state NOT IN ('completed', 'failed', 'cancelled')
	AND EXISTS (SELECT 1 FROM job_deps WHERE parent = NEW.id)
BEGIN
	UPDATE jobs SET state = 'cancelled', finished_at = NEW.updated_at, updated_at = NEW.updated_at,
		cancelled_by = NEW.id, hold = '',
		last_error = 'parent job ' || NEW.id || CASE NEW.state WHEN 'failed' THEN ' failed' ELSE ' was cancelled' END
	WHERE NEW.state != 'completed' AND state = 'blocked'
		AND id IN (SELECT child FROM job_deps WHERE parent = NEW.id AND run = 0);
	UPDATE jobs SET deps_left = deps_left - 1
	WHERE state = 'blocked' AND id IN (SELECT child FROM job_deps WHERE parent = NEW.id);
	UPDATE jobs SET state = 'scheduled', run_at = max(run_at, NEW.updated_at), updated_at = NEW.updated_at
	WHERE state = 'blocked' AND deps_left <= 0 AND id IN (SELECT child FROM job_deps WHERE parent = NEW.id);
END;

-- A parent retried by hand (failed or cancelled → ready again) is a parent
-- that has not ended: its blocked children count it again, and those it
-- cancelled go back to blocked, counting every parent that has not ended
-- (or, for a child that is cancelled by failures, not completed).
CREATE TRIGGER jobs_flow_reopen AFTER UPDATE OF state ON jobs
WHEN OLD.state IN ('failed', 'cancelled') AND NEW.state NOT IN ('completed', 'failed', 'cancelled')
	AND EXISTS (SELECT 1 FROM job_deps WHERE parent = NEW.id)
BEGIN
	UPDATE jobs SET deps_left = deps_left + 1
	WHERE state = 'blocked' AND id IN (SELECT child FROM job_deps WHERE parent = NEW.id);
	UPDATE jobs SET state = 'blocked', finished_at = 0, updated_at = NEW.updated_at, cancelled_by = 0,
		last_error = '',
		deps_left = (SELECT count(*) FROM job_deps d JOIN jobs p ON p.id = d.parent
			WHERE d.child = jobs.id AND p.state != 'completed'
			AND NOT (d.run = 1 AND p.state IN ('failed', 'cancelled')))
	WHERE state = 'cancelled' AND cancelled_by = NEW.id
		AND id IN (SELECT child FROM job_deps WHERE parent = NEW.id);
END;

-- A group's job that a cascade cancelled is settled by the write, and a
-- released job that is due is made ready by it (see flow_moved), so it
-- need not wait for the next Lease to be promoted.
CREATE TRIGGER jobs_flow_moved AFTER UPDATE OF state ON jobs
WHEN OLD.state = 'blocked' AND ((NEW.state = 'cancelled' AND NEW.grp != '')
	OR (NEW.state = 'scheduled' AND NEW.run_at <= NEW.updated_at))
BEGIN
	INSERT OR IGNORE INTO flow_moved (id) VALUES (NEW.id);
END;

-- A deleted job takes its edges with it.
CREATE TRIGGER jobs_flow_delete AFTER DELETE ON jobs
WHEN OLD.depends_on != '' OR EXISTS (SELECT 1 FROM job_deps WHERE parent = OLD.id)
BEGIN
	DELETE FROM job_deps WHERE child = OLD.id;
	DELETE FROM job_deps WHERE parent = OLD.id;
END;
