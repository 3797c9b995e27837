-- The event log: what happened to jobs and groups, for readers that follow
-- it by cursor at their own pace (Client.Subscribe, Client.Wait). Rows are
-- written by the triggers the store creates at Open while its event log is
-- on (Options.Events), in the statement of the change they report, and by
-- SetProgress; PruneEvents deletes them.
--
-- A number drawn when a row is written cannot be a reader's cursor: rows
-- become visible when their transactions commit, in another order, so a
-- reader past number n could miss a smaller one committed later. A row is
-- therefore written without its place (pos NULL) and placed once it has
-- committed: readers place the committed rows before they read, one at a
-- time (an advisory lock), numbering them from event_log_pos. A placer
-- sees only committed rows and draws every number after the one before
-- it committed, so a number a reader has passed is never given again.
CREATE TABLE __schema__.event_log (
	id         bigint  GENERATED ALWAYS AS IDENTITY, -- write order, to place rows in
	pos        bigint,  -- the event's place and id; NULL until placed
	type       text    NOT NULL,
	job_id     text    NOT NULL DEFAULT '',
	queue      text    NOT NULL DEFAULT '',
	kind       text    NOT NULL DEFAULT '',
	tenant     text    NOT NULL DEFAULT '',
	grp        text    NOT NULL DEFAULT '',
	state      text    NOT NULL DEFAULT '',
	attempt    integer NOT NULL DEFAULT 0,
	error      text    NOT NULL DEFAULT '',
	data       text,   -- JSON, or NULL
	created_at bigint  NOT NULL
);

CREATE SEQUENCE __schema__.event_log_pos;
-- Reading: placed rows by place.
CREATE UNIQUE INDEX event_log_placed ON __schema__.event_log (pos) WHERE pos IS NOT NULL;
-- Placing: rows not placed yet, in write order.
CREATE INDEX event_log_unplaced ON __schema__.event_log (id) WHERE pos IS NULL;
-- Pruning by age.
CREATE INDEX event_log_at ON __schema__.event_log (created_at);

-- The newest place pruning deleted: a reader whose cursor is older has
-- missed events (EventBatch.Gap). One row.
CREATE TABLE __schema__.event_log_pruned (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	pos bigint  NOT NULL DEFAULT 0
);
INSERT INTO __schema__.event_log_pruned DEFAULT VALUES;

-- Readers blocked in ReadEvents, by store, until when (the database's
-- clock). The triggers notify only while one is registered: a NOTIFY makes
-- the commits of all notifying transactions take turns, a cost not worth
-- paying when no one waits. Unlogged: it is only a hint, and a reader
-- polls as well.
CREATE UNLOGGED TABLE __schema__.event_readers (
	reader text        PRIMARY KEY,
	until  timestamptz NOT NULL
);

-- New jobs, one event each in id order (a statement trigger: a batch is
-- one INSERT). TG_ARGV[0] is the store's NOTIFY channel: blocked readers
-- are woken at commit, to place and read the new rows.
CREATE FUNCTION __schema__.event_log_enqueued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO __schema__.event_log (type, job_id, queue, kind, tenant, grp, state, attempt, created_at)
	SELECT 'job.enqueued', n.id::text, n.queue, n.kind, n.tenant, n.grp, n.state, n.attempt, n.created_at
	FROM new_jobs n ORDER BY n.id;
	IF EXISTS (SELECT 1 FROM __schema__.event_readers WHERE until > now()) THEN
		PERFORM pg_notify(TG_ARGV[0], '');
	END IF;
	RETURN NULL;
END $$;

-- A job that started or reached a final state.
CREATE FUNCTION __schema__.event_log_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO __schema__.event_log (type, job_id, queue, kind, tenant, grp, state, attempt, error, created_at)
	VALUES (CASE NEW.state WHEN 'active' THEN 'job.started' ELSE 'job.' || NEW.state END,
		NEW.id::text, NEW.queue, NEW.kind, NEW.tenant, NEW.grp, NEW.state, NEW.attempt,
		CASE WHEN NEW.state IN ('failed', 'cancelled') THEN NEW.last_error ELSE '' END, NEW.updated_at);
	IF EXISTS (SELECT 1 FROM __schema__.event_readers WHERE until > now()) THEN
		PERFORM pg_notify(TG_ARGV[0], '');
	END IF;
	RETURN NULL;
END $$;
