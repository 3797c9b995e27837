-- The event outbox: one row per event not yet delivered. An event is
-- written in the same transaction as the job transition it reports, and
-- deleted when a dispatcher acknowledges it. Times are Unix nanoseconds.
-- due_at is when the event may be claimed: a new event is due at once; a
-- claim moves due_at to the claim's deadline, so an expired claim is simply
-- due again; a retry moves it to the retry time. seq is a plain rowid, not
-- AUTOINCREMENT: it only orders claims, and skipping the sequence table
-- keeps the insert cheap on the path of every job completion.
CREATE TABLE outbox (
	seq         INTEGER PRIMARY KEY,
	event_id    TEXT    NOT NULL UNIQUE,
	type        TEXT    NOT NULL,
	job_id      TEXT    NOT NULL DEFAULT '',
	queue       TEXT    NOT NULL DEFAULT '',
	kind        TEXT    NOT NULL DEFAULT '',
	tenant      TEXT    NOT NULL DEFAULT '',
	grp         TEXT    NOT NULL DEFAULT '',
	state       TEXT    NOT NULL DEFAULT '',
	attempt     INTEGER NOT NULL DEFAULT 0,
	error       TEXT    NOT NULL DEFAULT '',
	data        BLOB,
	created_at  INTEGER NOT NULL,
	due_at      INTEGER NOT NULL,
	claim_token TEXT,     -- NULL while unclaimed
	progress    TEXT    NOT NULL DEFAULT '{}' -- JSON: subscription → {attempts, final}
);

-- Claiming: due events, oldest due first.
CREATE INDEX outbox_due ON outbox (due_at, seq);

-- The delivery log: one row per attempt to deliver an event to a
-- subscription. latency is in nanoseconds.
CREATE TABLE deliveries (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	event_id     TEXT    NOT NULL,
	event_type   TEXT    NOT NULL,
	job_id       TEXT    NOT NULL DEFAULT '',
	grp          TEXT    NOT NULL DEFAULT '',
	subscription TEXT    NOT NULL,
	url          TEXT    NOT NULL DEFAULT '',
	attempt      INTEGER NOT NULL,
	at           INTEGER NOT NULL,
	status       INTEGER NOT NULL DEFAULT 0,
	latency      INTEGER NOT NULL DEFAULT 0,
	error        TEXT    NOT NULL DEFAULT '',
	outcome      TEXT    NOT NULL
);

-- The log per job, per subscription and per event, newest first.
CREATE INDEX deliveries_job ON deliveries (job_id, seq) WHERE job_id != '';
CREATE INDEX deliveries_subscription ON deliveries (subscription, seq);
CREATE INDEX deliveries_event ON deliveries (event_id, seq);
-- Pruning by age.
CREATE INDEX deliveries_at ON deliveries (at);
