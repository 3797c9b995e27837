-- The jobs table's three row triggers on a change of state (a group's
-- completion job ends or reopens its group; a parent's end settles its
-- children; a parent retried by hand reopens them) become one. Postgres
-- reads and compiles the WHEN of every row trigger for each UPDATE
-- statement on the table, and nearly every such statement (a lease, a
-- batch of completions) fires none of them: one cheap WHEN costs a third
-- of three. The one trigger lets through only rows that may need a step;
-- its function makes the tests the three WHENs made, in the order the
-- three triggers fired (by name), with the bodies of 0003, 0021 and 0023.
-- pg_trigger_depth() is 1 in a trigger called by a statement of the
-- store's own: the old WHENs' depth 0 seen from inside.
CREATE FUNCTION __schema__.state_moved() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	final_new boolean := NEW.state IN ('completed', 'failed', 'cancelled');
	final_old boolean := OLD.state IN ('completed', 'failed', 'cancelled');
	at_ bigint := NEW.updated_at;
	ended bigint[];
	bad bigint[];
	due text[] := '{}';
	more text[];
	frontier bigint[];
	touched bigint[];
	ch text;
	q text;
BEGIN
	-- completion_ends_group
	IF left(NEW.unique_key, 6) = 'group:' AND final_new IS DISTINCT FROM final_old THEN
		UPDATE __schema__.job_groups SET ended_at = CASE WHEN final_new
			THEN greatest(done_at, NEW.finished_at) ELSE 0 END
		WHERE id = substr(NEW.unique_key, 7) AND completion_job = NEW.id;
	END IF;
	IF NOT NEW.has_children OR pg_trigger_depth() <> 1 THEN
		RETURN NULL;
	END IF;
	-- flow_reopen
	IF OLD.state IN ('failed', 'cancelled') AND NOT final_new THEN
		frontier := ARRAY[NEW.id];
		touched := ARRAY[NEW.id];
		LOOP
			WITH r AS (
				UPDATE __schema__.jobs j SET state = 'blocked', finished_at = 0, updated_at = at_, cancelled_by = 0, last_error = ''
				WHERE j.state = 'cancelled' AND j.cancelled_by = ANY(frontier)
					AND j.id IN (SELECT child FROM __schema__.job_deps WHERE parent = ANY(frontier))
					AND (j.grp = '' OR j.grp IN (SELECT id FROM __schema__.job_groups
						WHERE done_at = 0 AND NOT cancel_requested))
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
	END IF;
	-- flow_settle
	IF final_new AND NOT final_old THEN
		ended := ARRAY[NEW.id];
		bad := CASE WHEN NEW.state = 'completed' THEN '{}'::bigint[] ELSE ARRAY[NEW.id] END;
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
	END IF;
	RETURN NULL;
END $$;

DROP TRIGGER jobs_completion_ends_group ON __schema__.jobs;
DROP TRIGGER jobs_flow_reopen ON __schema__.jobs;
DROP TRIGGER jobs_flow_settle ON __schema__.jobs;
DROP FUNCTION __schema__.completion_ends_group();
DROP FUNCTION __schema__.flow_reopen();
DROP FUNCTION __schema__.flow_settle();

CREATE TRIGGER jobs_state_moved AFTER UPDATE OF state ON __schema__.jobs FOR EACH ROW
	WHEN (NEW.has_children OR left(NEW.unique_key, 6) = 'group:')
	EXECUTE FUNCTION __schema__.state_moved();
