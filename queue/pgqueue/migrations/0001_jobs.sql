-- Jobs, one row each. Times are Unix nanoseconds read from the store's
-- clock (0 = unset), as in the other stores, so a fake clock drives them
-- in tests and no time zone or precision is lost. The id is the job's
-- enqueue sequence: equal priorities run in id order.
CREATE TABLE __schema__.jobs (
	id               bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	queue            text    NOT NULL,
	kind             text    NOT NULL,
	payload          bytea   NOT NULL DEFAULT '\x',
	tenant           text    NOT NULL DEFAULT '',
	grp              text    NOT NULL DEFAULT '',
	priority         integer NOT NULL DEFAULT 0,
	run_at           bigint  NOT NULL DEFAULT 0,
	max_attempts     integer NOT NULL,
	timeout          bigint  NOT NULL DEFAULT 0,
	unique_key       text,   -- NULL when the job is not unique
	unique_until     bigint, -- NULL: the key is held until the job is final
	state            text    NOT NULL,
	attempt          integer NOT NULL DEFAULT 0,
	stalls           integer NOT NULL DEFAULT 0,
	last_error       text    NOT NULL DEFAULT '',
	errors           text    NOT NULL DEFAULT '[]', -- JSON array of attempt errors
	result           bytea,
	cancel_requested boolean NOT NULL DEFAULT false,
	lease_token      text,
	lease_until      bigint,
	worker_id        text,
	created_at       bigint  NOT NULL,
	updated_at       bigint  NOT NULL,
	started_at       bigint  NOT NULL DEFAULT 0,
	finished_at      bigint  NOT NULL DEFAULT 0,
	webhook          text    NOT NULL DEFAULT '',
	trace            text    NOT NULL DEFAULT '',
	-- An active job always has a lease; any other job never has one.
	CONSTRAINT jobs_lease_iff_active
		CHECK ((state = 'active') = (lease_token IS NOT NULL AND lease_until IS NOT NULL)),
	CONSTRAINT jobs_state_known
		CHECK (state IN ('scheduled','pending','waiting','active','retrying','completed','failed','cancelled','blocked'))
);

-- Every transition changes state, which partial indexes depend on, so no
-- update is HOT and each one adds an entry to every index the new row
-- version belongs to. Partial indexes are therefore preferred: a row is
-- in them only while it matches. Only the primary key and
-- jobs_queue_state hold every row.

-- Leasing: ready jobs of a queue by priority, then sequence.
CREATE INDEX jobs_ready ON __schema__.jobs (queue, priority, id) WHERE state = 'pending';
-- Promotion: jobs waiting for a time, by queue and that time.
CREATE INDEX jobs_due ON __schema__.jobs (queue, run_at) WHERE state IN ('scheduled', 'retrying');
-- Rescue: active jobs by lease deadline.
CREATE INDEX jobs_lease ON __schema__.jobs (lease_until) WHERE state = 'active';
-- Cleanup: finished jobs by state and finish time.
CREATE INDEX jobs_finished ON __schema__.jobs (state, finished_at) WHERE state IN ('completed', 'failed', 'cancelled');
-- Stats and listing by queue and state.
CREATE INDEX jobs_queue_state ON __schema__.jobs (queue, state, id);
-- Unique keys.
CREATE INDEX jobs_unique ON __schema__.jobs (queue, unique_key) WHERE unique_key IS NOT NULL;
