-- Jobs, one row each. Times are Unix nanoseconds (0 = unset). The id is the
-- job's enqueue sequence: AUTOINCREMENT never reuses a number, so equal
-- priorities run in id order.
CREATE TABLE jobs (
	id               INTEGER PRIMARY KEY AUTOINCREMENT,
	queue            TEXT    NOT NULL,
	kind             TEXT    NOT NULL,
	payload          BLOB,
	tenant           TEXT    NOT NULL DEFAULT '',
	grp              TEXT    NOT NULL DEFAULT '',
	priority         INTEGER NOT NULL DEFAULT 0,
	run_at           INTEGER NOT NULL DEFAULT 0,
	max_attempts     INTEGER NOT NULL,
	timeout          INTEGER NOT NULL DEFAULT 0,
	unique_key       TEXT,    -- NULL when the job is not unique
	unique_until     INTEGER, -- NULL: the key is held until the job is final
	state            TEXT    NOT NULL,
	attempt          INTEGER NOT NULL DEFAULT 0,
	stalls           INTEGER NOT NULL DEFAULT 0,
	last_error       TEXT    NOT NULL DEFAULT '',
	errors           TEXT    NOT NULL DEFAULT '[]', -- JSON array of attempt errors
	result           BLOB,
	cancel_requested INTEGER NOT NULL DEFAULT 0,
	lease_token      TEXT,
	lease_until      INTEGER,
	worker_id        TEXT,
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL,
	started_at       INTEGER NOT NULL DEFAULT 0,
	finished_at      INTEGER NOT NULL DEFAULT 0,
	-- An active job always has a lease; any other job never has one.
	CHECK ((state = 'active') = (lease_token IS NOT NULL AND lease_until IS NOT NULL)),
	CHECK (state IN ('scheduled','pending','waiting','active','retrying','completed','failed','cancelled'))
);

-- Leasing: ready jobs of a queue by priority, then sequence.
CREATE INDEX jobs_ready ON jobs (queue, priority, id) WHERE state = 'pending';
-- Promotion: only jobs waiting for a time, by that time.
CREATE INDEX jobs_due ON jobs (run_at) WHERE state IN ('scheduled', 'retrying');
-- Rescue: active jobs by lease deadline.
CREATE INDEX jobs_lease ON jobs (lease_until) WHERE state = 'active';
-- Cleanup: finished jobs by state and finish time.
CREATE INDEX jobs_finished ON jobs (state, finished_at) WHERE state IN ('completed', 'failed', 'cancelled');
-- Listing and stats by queue and state.
CREATE INDEX jobs_queue_state ON jobs (queue, state, id);
-- Unique keys.
CREATE INDEX jobs_unique ON jobs (queue, unique_key) WHERE unique_key IS NOT NULL;
