-- fair_start's latest start and finish tags, read as "the last entry of
-- the index" (ORDER BY ... DESC LIMIT 1) rather than max(): the planner
-- turns max() into that lookup only when its statistics say the table is
-- big, and right after the table was created or emptied they say it is
-- empty, so every new job scanned every finish tag of its queue and
-- tenant (an enqueue cost that grew with the queue). The result is the
-- same: the greatest non-null tag, or 0.
CREATE OR REPLACE FUNCTION __schema__.fair_start(q text, t text) RETURNS bigint LANGUAGE sql STABLE AS $$
	SELECT greatest(
		coalesce((SELECT vtime FROM __schema__.queue_sched WHERE queue = q), 0),
		coalesce((SELECT vstart FROM __schema__.jobs WHERE queue = q AND started_at > 0 AND vstart IS NOT NULL
			ORDER BY vstart DESC LIMIT 1), 0),
		coalesce((SELECT finish FROM __schema__.fair_finish WHERE queue = q AND tenant = t), 0),
		coalesce((SELECT vfinish FROM __schema__.jobs WHERE queue = q AND tenant = t AND vfinish IS NOT NULL
			ORDER BY vfinish DESC LIMIT 1), 0))
$$;
