-- The event outbox: one row per event not yet delivered, for webhooks.
-- A job's event is written by the trigger outbox_job_final, which the
-- store creates at Open while its outbox is on (Options.Outbox), in the
-- same statement, and so the same transaction, as the transition it
-- reports, whichever code made it. An event is deleted when a dispatcher
-- acknowledges it. Times are Unix nanoseconds from the store's clock.
-- due_at is when the event may be claimed: a new event is due at once; a
-- claim moves due_at to the claim's deadline, so an expired claim is due
-- again; a retry moves it to the retry time.
CREATE TABLE __schema__.outbox (
	seq         bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	event_id    text    NOT NULL UNIQUE,
	type        text    NOT NULL,
	job_id      text    NOT NULL DEFAULT '',
	queue       text    NOT NULL DEFAULT '',
	kind        text    NOT NULL DEFAULT '',
	tenant      text    NOT NULL DEFAULT '',
	grp         text    NOT NULL DEFAULT '',
	state       text    NOT NULL DEFAULT '',
	attempt     integer NOT NULL DEFAULT 0,
	error       text    NOT NULL DEFAULT '',
	data        text,   -- JSON, NULL for job events
	created_at  bigint  NOT NULL,
	due_at      bigint  NOT NULL,
	claim_token text,   -- NULL while unclaimed
	progress    text    NOT NULL DEFAULT '{}' -- JSON: subscription → {attempts, final}
);

-- Claiming: due events, oldest due first.
CREATE INDEX outbox_due ON __schema__.outbox (due_at, seq);

-- The delivery log: one row per attempt to deliver an event to a
-- subscription. latency is in nanoseconds.
CREATE TABLE __schema__.deliveries (
	seq          bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	event_id     text    NOT NULL,
	event_type   text    NOT NULL,
	job_id       text    NOT NULL DEFAULT '',
	grp          text    NOT NULL DEFAULT '',
	subscription text    NOT NULL,
	url          text    NOT NULL DEFAULT '',
	attempt      integer NOT NULL,
	at           bigint  NOT NULL,
	status       integer NOT NULL DEFAULT 0,
	latency      bigint  NOT NULL DEFAULT 0,
	error        text    NOT NULL DEFAULT '',
	outcome      text    NOT NULL
);

-- The log per job, per subscription and per event, newest first.
CREATE INDEX deliveries_job ON __schema__.deliveries (job_id, seq) WHERE job_id <> '';
CREATE INDEX deliveries_subscription ON __schema__.deliveries (subscription, seq);
CREATE INDEX deliveries_event ON __schema__.deliveries (event_id, seq);
-- Pruning by age.
CREATE INDEX deliveries_at ON __schema__.deliveries (at);

-- The event of a job that reached a final state, copied from its new row.
-- Every transition to a final state writes finished_at from the store's
-- clock, so that is the event's time. The id is random (evt_ and 32 hex
-- digits, as backend.NewEventID), so receivers can deduplicate across
-- stores.
CREATE FUNCTION __schema__.outbox_job_final() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO __schema__.outbox (event_id, type, job_id, queue, kind, tenant, grp, state, attempt,
		error, created_at, due_at)
	VALUES ('evt_' || replace(gen_random_uuid()::text, '-', ''), 'job.' || NEW.state, NEW.id::text,
		NEW.queue, NEW.kind, NEW.tenant, NEW.grp, NEW.state, NEW.attempt,
		CASE WHEN NEW.state = 'completed' THEN '' ELSE NEW.last_error END,
		coalesce(nullif(NEW.finished_at, 0), NEW.updated_at), coalesce(nullif(NEW.finished_at, 0), NEW.updated_at));
	RETURN NULL;
END $$;
