-- A Lease promotes the due jobs of the queues it leases from, and only
-- those (as every store does): due jobs by queue, then due time.
CREATE INDEX jobs_due_queue ON jobs (queue, run_at) WHERE state IN ('scheduled', 'retrying');
