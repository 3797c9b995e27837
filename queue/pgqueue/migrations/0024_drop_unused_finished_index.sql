-- jobs_finished (every finished job by state and finish time) served no
-- query: the cleaner reads jobs_finished_loose, and a group's finished
-- jobs are found through the group. Each finished job was one more index
-- entry to write; at a high rate the index entries are a third of the
-- server's time.
DROP INDEX IF EXISTS __schema__.jobs_finished;
