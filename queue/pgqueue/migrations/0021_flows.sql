-- Flows: jobs that wait for other jobs (queue.JobSpec.DependsOn,
-- queue.Client.EnqueueFlow). The state 'blocked' (waiting for parents) is
-- in jobs_state_known since the first version.

-- flow and flow_node: the flow the job belongs to and its name there.
-- depends_on: its parents' ids, comma-separated, as given (never changes).
-- deps_left: while blocked, its parents that have not yet ended (or
-- completed, for a job that a parent's failure cancels).
-- cancelled_by: the parent whose end cancelled it, so that a retry of that
-- parent by hand puts it back to blocked.
-- has_children: set when a job is first named as a parent, so that the
-- triggers below cost the transitions of every other job only their WHEN
-- test, and so that the store ends such a job in a transaction of its own
-- (see queries.go), never in a shared batch.
ALTER TABLE __schema__.jobs ADD COLUMN flow text NOT NULL DEFAULT '';
ALTER TABLE __schema__.jobs ADD COLUMN flow_node text NOT NULL DEFAULT '';
ALTER TABLE __schema__.jobs ADD COLUMN depends_on text NOT NULL DEFAULT '';
ALTER TABLE __schema__.jobs ADD COLUMN on_parent_failure text NOT NULL DEFAULT '';
ALTER TABLE __schema__.jobs ADD COLUMN deps_left integer NOT NULL DEFAULT 0;
ALTER TABLE __schema__.jobs ADD COLUMN cancelled_by bigint NOT NULL DEFAULT 0;
ALTER TABLE __schema__.jobs ADD COLUMN has_children boolean NOT NULL DEFAULT false;

CREATE INDEX jobs_flow ON __schema__.jobs (flow, id) WHERE flow <> '';

-- The edges: child waits for parent. run is true when the child runs even
-- if the parent fails (OnParentFailure "run").
CREATE TABLE __schema__.job_deps (
	parent bigint  NOT NULL,
	child  bigint  NOT NULL,
	run    boolean NOT NULL DEFAULT false,
	PRIMARY KEY (parent, child)
);
CREATE INDEX job_deps_child ON __schema__.job_deps (child, parent);

CREATE TABLE __schema__.flows (
	id         text PRIMARY KEY,
	name       text   NOT NULL DEFAULT '',
	created_at bigint NOT NULL
);

-- Groups of jobs a cascade cancelled: the store settles them (a group whose
-- last unfinished job a cascade cancelled completes) in the transaction of
-- the transition that started the cascade, and deletes the rows. A row left
-- by a transition the store did not make (an operator's own SQL) is
-- settled by the next one that settles.
CREATE TABLE __schema__.flow_settle (
	id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	grp text   NOT NULL
);

-- The store's NOTIFY channel for schema s, as channelName (notify.go)
-- names it: Postgres bounds a channel name to 63 bytes, and a longer one
-- is a digest of the schema.
CREATE FUNCTION __schema__.notify_channel(s text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN octet_length('sluice_jobs.' || s) <= 63 THEN 'sluice_jobs.' || s
		ELSE 'sluice_jobs.' || left(encode(sha256(convert_to(s, 'UTF8')), 'hex'), 32) END
$$;

-- A parent that ends settles its blocked children, in the statement that
-- ended it, whatever the transition (Complete, Fail, Cancel, a rescue, a
-- tenant's MaxWait, an operator's SQL): on failure or cancellation the
-- children that follow it are cancelled, naming it; then every blocked
-- child counts one parent fewer, and one with none left is released as
-- scheduled at now, which the next Lease promotes like any due job (fair
-- tag, tenant and group room). The cancelled children end in turn, level
-- by level, in this one call: the trigger does not fire for the updates
-- it makes itself (pg_trigger_depth in its WHEN), so a chain of any depth
-- costs no nested calls. now is the parent's updated_at, written by the
-- transition from the store's clock. The queues that got due jobs are
-- notified at commit, on the store's channel (see channelName).
CREATE FUNCTION __schema__.flow_settle() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	at_ bigint := NEW.updated_at;
	ended bigint[] := ARRAY[NEW.id];
	bad bigint[] := CASE WHEN NEW.state = 'completed' THEN '{}'::bigint[] ELSE ARRAY[NEW.id] END;
	due text[] := '{}';
	more text[];
	ch text;
	q text;
BEGIN
	WHILE cardinality(ended) > 0 LOOP
		WITH c AS (
			UPDATE __schema__.jobs j SET state = 'cancelled', finished_at = at_, updated_at = at_,
				cancelled_by = d.parent, hold = '', wait_until = 0,
				last_error = 'parent job ' || d.parent || CASE WHEN p.state = 'failed' THEN ' failed' ELSE ' was cancelled' END
			FROM (SELECT child, min(parent) AS parent FROM __schema__.job_deps
					WHERE parent = ANY(bad) AND NOT run GROUP BY child) d
				JOIN __schema__.jobs p ON p.id = d.parent
			WHERE j.id = d.child AND j.state = 'blocked'
			RETURNING j.id, j.grp, j.has_children
		), g AS (
			INSERT INTO __schema__.flow_settle (grp) SELECT DISTINCT grp FROM c WHERE grp <> ''
		)
		SELECT coalesce(array_agg(id) FILTER (WHERE has_children), '{}') INTO bad FROM c;

		WITH r AS (
			UPDATE __schema__.jobs j SET deps_left = j.deps_left - d.n,
				state = CASE WHEN j.deps_left - d.n <= 0 THEN 'scheduled' ELSE j.state END,
				run_at = CASE WHEN j.deps_left - d.n <= 0 THEN greatest(j.run_at, at_) ELSE j.run_at END,
				updated_at = CASE WHEN j.deps_left - d.n <= 0 THEN at_ ELSE j.updated_at END
			FROM (SELECT child, count(*) AS n FROM __schema__.job_deps WHERE parent = ANY(ended) GROUP BY child) d
			WHERE j.id = d.child AND j.state = 'blocked'
			RETURNING j.state, j.queue, j.run_at
		)
		SELECT coalesce(array_agg(DISTINCT queue) FILTER (WHERE state = 'scheduled' AND run_at <= at_), '{}') INTO more FROM r;
		due := due || more;
		ended := bad;
	END LOOP;
	IF cardinality(due) > 0 THEN
		ch := __schema__.notify_channel(TG_TABLE_SCHEMA);
		FOR q IN SELECT DISTINCT u FROM unnest(due) AS u LOOP
			PERFORM pg_notify(ch, q);
		END LOOP;
	END IF;
	RETURN NULL;
END $$;

CREATE TRIGGER jobs_flow_settle AFTER UPDATE OF state ON __schema__.jobs FOR EACH ROW
	WHEN (NEW.has_children AND NEW.state IN ('completed', 'failed', 'cancelled')
		AND OLD.state NOT IN ('completed', 'failed', 'cancelled') AND pg_trigger_depth() = 0)
	EXECUTE FUNCTION __schema__.flow_settle();

-- A parent retried by hand (failed or cancelled → ready again) is a parent
-- that has not ended: the children it cancelled go back to blocked, and so,
-- level by level, the ones they cancelled; then every blocked child of a
-- job reopened here counts again its parents that have not ended (or, for
-- a child that a failure cancels, not completed). Counting once all are
-- reopened, rather than adding one per level, counts each parent once.
CREATE FUNCTION __schema__.flow_reopen() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	at_ bigint := NEW.updated_at;
	frontier bigint[] := ARRAY[NEW.id];
	touched bigint[] := ARRAY[NEW.id];
BEGIN
	LOOP
		WITH r AS (
			UPDATE __schema__.jobs j SET state = 'blocked', finished_at = 0, updated_at = at_, cancelled_by = 0, last_error = ''
			WHERE j.state = 'cancelled' AND j.cancelled_by = ANY(frontier)
				AND j.id IN (SELECT child FROM __schema__.job_deps WHERE parent = ANY(frontier))
			RETURNING j.id
		)
		SELECT coalesce(array_agg(id), '{}') INTO frontier FROM r;
		EXIT WHEN cardinality(frontier) = 0;
		touched := touched || frontier;
	END LOOP;
	UPDATE __schema__.jobs j SET deps_left = (SELECT count(*) FROM __schema__.job_deps d
			JOIN __schema__.jobs p ON p.id = d.parent
			WHERE d.child = j.id AND p.state <> 'completed'
			AND NOT (d.run AND p.state IN ('failed', 'cancelled')))
	WHERE j.state = 'blocked' AND j.id IN (SELECT child FROM __schema__.job_deps WHERE parent = ANY(touched));
	RETURN NULL;
END $$;

CREATE TRIGGER jobs_flow_reopen AFTER UPDATE OF state ON __schema__.jobs FOR EACH ROW
	WHEN (NEW.has_children AND OLD.state IN ('failed', 'cancelled')
		AND NEW.state NOT IN ('completed', 'failed', 'cancelled') AND pg_trigger_depth() = 0)
	EXECUTE FUNCTION __schema__.flow_reopen();

-- Deleted jobs take their edges with them (one call per DELETE statement,
-- as the other delete triggers).
CREATE FUNCTION __schema__.flow_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM __schema__.job_deps d USING gone g WHERE g.depends_on <> '' AND d.child = g.id;
	DELETE FROM __schema__.job_deps d USING gone g WHERE g.has_children AND d.parent = g.id;
	RETURN NULL;
END $$;
CREATE TRIGGER jobs_flow_forget AFTER DELETE ON __schema__.jobs
	REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION __schema__.flow_forget();
