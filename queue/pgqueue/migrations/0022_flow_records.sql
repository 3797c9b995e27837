-- A flow's own record goes with its last job: the cleaner deletes jobs,
-- and a flow none of whose jobs is left has nothing more to show. One
-- statement trigger per delete, whichever code made it; the jobs_flow
-- index makes each look-up one probe. Records left before it are removed
-- here once.
CREATE FUNCTION __schema__.drop_finished_flows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM __schema__.flows f
	WHERE f.id IN (SELECT DISTINCT g.flow FROM gone g WHERE g.flow <> '')
		AND NOT EXISTS (SELECT 1 FROM __schema__.jobs j WHERE j.flow = f.id);
	RETURN NULL;
END $$;

CREATE TRIGGER jobs_flow_gone AFTER DELETE ON __schema__.jobs
	REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION __schema__.drop_finished_flows();

DELETE FROM __schema__.flows f WHERE NOT EXISTS (SELECT 1 FROM __schema__.jobs j WHERE j.flow = f.id);
