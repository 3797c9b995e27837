-- A parent retried by hand puts back the children it cancelled; a child of
-- a group comes back only while its group is open. Once the group ended,
-- its completion counted the child cancelled, and a group's jobs are never
-- retried, so the child stays cancelled.
CREATE OR REPLACE FUNCTION __schema__.flow_reopen() RETURNS trigger LANGUAGE plpgsql AS $$
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
	RETURN NULL;
END $$;
