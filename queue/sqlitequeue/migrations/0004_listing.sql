-- Listing jobs by tenant, kind or group, in id order either way, reads
-- one of these indexes instead of every job of the table. Jobs without a
-- tenant or group are left out of those two, which keeps them small where
-- most jobs have none.
CREATE INDEX jobs_list_tenant ON jobs (tenant, id) WHERE tenant != '';
CREATE INDEX jobs_list_kind ON jobs (kind, id);
CREATE INDEX jobs_list_group ON jobs (grp, id) WHERE grp != '';
