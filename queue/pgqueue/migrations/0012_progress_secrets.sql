-- Job progress: the latest report of a job's handler, one row per job
-- that reported any, deleted with the job. percent is NULL when the
-- handler reported data only; data is a JSON object or NULL. Times are
-- Unix nanoseconds.
CREATE TABLE __schema__.job_progress (
	job_id      bigint PRIMARY KEY REFERENCES __schema__.jobs (id) ON DELETE CASCADE,
	percent     double precision,
	data        text,
	reported_at bigint NOT NULL
);

-- The webhook signing secret of each tenant that has one.
CREATE TABLE __schema__.tenant_secrets (
	tenant     text   PRIMARY KEY,
	secret     text   NOT NULL,
	updated_at bigint NOT NULL
);
