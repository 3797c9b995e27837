-- Job progress: the latest report of a job's handler, one row per job
-- that reported any, kept until the job itself is deleted. percent is
-- NULL when the handler reported data only; data is a JSON object or
-- NULL. Times are Unix nanoseconds.
CREATE TABLE job_progress (
	job_id     INTEGER PRIMARY KEY,
	percent    REAL,
	data       TEXT,
	reported_at INTEGER NOT NULL -- not updated_at: Get joins it with jobs
);

CREATE TRIGGER job_progress_gone AFTER DELETE ON jobs BEGIN
	DELETE FROM job_progress WHERE job_id = old.id;
END;

-- The event log: what happened to jobs and groups, in order, for readers
-- that follow it by cursor (seq) at their own pace. Rows are written by
-- the triggers the backend creates at open when its event log is on
-- (eventlog.go), in the same statement as the change they report, and
-- by SetProgress; they are deleted by PruneEvents. AUTOINCREMENT: a seq
-- is never reused, so a reader's cursor never points at a later event.
CREATE TABLE event_log (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	type       TEXT    NOT NULL,
	job_id     TEXT    NOT NULL DEFAULT '',
	queue      TEXT    NOT NULL DEFAULT '',
	kind       TEXT    NOT NULL DEFAULT '',
	tenant     TEXT    NOT NULL DEFAULT '',
	grp        TEXT    NOT NULL DEFAULT '',
	state      TEXT    NOT NULL DEFAULT '',
	attempt    INTEGER NOT NULL DEFAULT 0,
	error      TEXT    NOT NULL DEFAULT '',
	data       TEXT,
	created_at INTEGER NOT NULL
);

-- Pruning by age.
CREATE INDEX event_log_at ON event_log (created_at);
