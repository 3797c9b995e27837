-- Listing jobs of a queue, tenant, kind or group, in id order either way,
-- reads a page from one of these indexes instead of sorting every match
-- (jobs_queue_state gives id order within one state only). None of these
-- columns changes after the insert, so state transitions never touch
-- them. Jobs without a tenant or group are left out of those two, which
-- keeps them small where most jobs have none.
CREATE INDEX jobs_list_queue ON jobs (queue, id);
CREATE INDEX jobs_list_tenant ON jobs (tenant, id) WHERE tenant != '';
CREATE INDEX jobs_list_kind ON jobs (kind, id);
CREATE INDEX jobs_list_group ON jobs (grp, id) WHERE grp != '';
