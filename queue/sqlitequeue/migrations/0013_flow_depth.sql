-- flow_depth: how many generations of parents a job has (0 for a job with
-- none; one more than its deepest parent otherwise). A cascade through a
-- flow is one nested trigger per generation, and SQLite bounds the nesting,
-- so a new job that would be too deep is refused (MaxFlowDepth). Jobs
-- stored before count as 0.
ALTER TABLE jobs ADD COLUMN flow_depth INTEGER NOT NULL DEFAULT 0;
