-- Recurring schedules (queue.ScheduleStore). The definition is kept as the
-- queue package encoded it; the rest is the state the scheduler claims
-- ticks by. Times are Unix nanoseconds, 0 for none.
CREATE TABLE schedules (
	name          TEXT PRIMARY KEY,
	def           BLOB NOT NULL,
	timing        TEXT NOT NULL,
	source        TEXT NOT NULL,
	paused        INTEGER NOT NULL DEFAULT 0,
	last_tick     INTEGER NOT NULL,
	pending       INTEGER NOT NULL DEFAULT 0,
	claimed_at    INTEGER NOT NULL DEFAULT 0,
	last_job      TEXT NOT NULL DEFAULT '',
	last_run_tick INTEGER NOT NULL DEFAULT 0,
	last_run_at   INTEGER NOT NULL DEFAULT 0,
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL
) WITHOUT ROWID;
