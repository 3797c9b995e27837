-- Recurring schedules (queue.ScheduleStore). The definition is kept as the
-- queue package encoded it; the rest is the state the scheduler claims
-- ticks by. Times are Unix nanoseconds, 0 for none.
CREATE TABLE __schema__.schedules (
	name          text    PRIMARY KEY,
	def           bytea   NOT NULL,
	timing        bytea   NOT NULL, -- text that may hold NUL bytes
	source        text    NOT NULL,
	paused        boolean NOT NULL DEFAULT false,
	last_tick     bigint  NOT NULL,
	pending       boolean NOT NULL DEFAULT false,
	claimed_at    bigint  NOT NULL DEFAULT 0,
	last_job      text    NOT NULL DEFAULT '',
	last_run_tick bigint  NOT NULL DEFAULT 0,
	last_run_at   bigint  NOT NULL DEFAULT 0,
	created_at    bigint  NOT NULL,
	updated_at    bigint  NOT NULL
);
