-- A job's own webhook (queue.Webhook as JSON) and the trace context of
-- the call that enqueued it; a group's webhook; and the webhook signing
-- secret of each tenant that has one. Empty means none; adding a column
-- with a constant default rewrites no row.

ALTER TABLE jobs ADD COLUMN webhook TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN trace TEXT NOT NULL DEFAULT '';
ALTER TABLE job_groups ADD COLUMN webhook TEXT NOT NULL DEFAULT '';

CREATE TABLE tenant_secrets (
	tenant     TEXT PRIMARY KEY,
	secret     TEXT NOT NULL,
	updated_at INTEGER NOT NULL
) WITHOUT ROWID;
