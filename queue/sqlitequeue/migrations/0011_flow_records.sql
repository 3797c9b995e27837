-- A flow's own record goes with its last job: the cleaner deletes jobs,
-- and a flow none of whose jobs is left has nothing more to show. The
-- trigger fires on every delete, whichever code made it; the jobs_flow
-- index makes its look-up one probe. Records left before it are removed
-- here once.
CREATE TRIGGER jobs_flow_gone AFTER DELETE ON jobs
WHEN OLD.flow != '' AND NOT EXISTS (SELECT 1 FROM jobs WHERE flow = OLD.flow)
BEGIN
	DELETE FROM flows WHERE id = OLD.flow;
END;

DELETE FROM flows WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.flow = flows.id);
