-- The jobs table's two CHECK constraints become one. Postgres reads and
-- compiles every CHECK of a table for each statement that writes it, so
-- two constraints cost each lease and each batch of completions twice
-- the fixed work of one.
--
-- The new constraint also ties lease_until to lease_token (both set or
-- both NULL, as every statement of the store writes them), so a matching
-- lease_token alone proves a job active and held by that lease: the
-- completions' fence reads no state, which would let the planner read
-- the job through jobs_lease, whose dead entries of finished jobs it then
-- visits, instead of through its primary key.
--
-- NOT VALID: rows written before it met the old constraints, and the store
-- never wrote a token without a deadline; checking them would lock the
-- table for a scan of every job. New and changed rows are checked.
ALTER TABLE __schema__.jobs
	DROP CONSTRAINT jobs_lease_iff_active,
	DROP CONSTRAINT jobs_state_known,
	ADD CONSTRAINT jobs_valid CHECK (
		state IN ('scheduled','pending','waiting','active','retrying','completed','failed','cancelled','blocked')
		AND (state = 'active') = (lease_token IS NOT NULL)
		AND (lease_token IS NULL) = (lease_until IS NULL)) NOT VALID;
