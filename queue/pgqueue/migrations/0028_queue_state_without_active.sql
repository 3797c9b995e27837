-- jobs_queue_state (listing a queue's jobs by state, in id order) no
-- longer holds active jobs: a job took an entry there on its lease, one of
-- the six a job takes between its lease and its end. The active jobs are
-- few (at most the workers' slots) and jobs_lease holds them all, so a
-- list of a queue's active jobs reads them from there.
DROP INDEX IF EXISTS __schema__.jobs_queue_state;
CREATE INDEX jobs_queue_state ON __schema__.jobs (queue, state, id) WHERE state <> 'active';
