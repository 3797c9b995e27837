package sqlitequeue

import (
	"context"
	"database/sql"
)

// outboxCascadeTrigger records the event of a job that a flow's cascade
// cancelled: a parent that failed or was cancelled ends its waiting
// children in the trigger of migrations/0007_flows.sql, inside the
// statement that ended the parent, where no Go code sees them go. Every
// other job's end is recorded by the transition's own code (emitState).
// It exists while the outbox is on (Options.Outbox); Open creates or
// drops it, as it does the event log's triggers. The event id has the
// form backend.NewEventID gives.
const outboxCascadeTrigger = `CREATE TRIGGER IF NOT EXISTS outbox_flow_cascade AFTER UPDATE OF state ON jobs
	WHEN old.state = 'blocked' AND new.state = 'cancelled' AND new.cancelled_by != 0 BEGIN
		INSERT INTO outbox (event_id, type, job_id, queue, kind, tenant, grp, state, attempt, error, created_at, due_at)
		VALUES ('evt_' || lower(hex(randomblob(16))), 'job.cancelled', CAST(new.id AS TEXT), new.queue, new.kind,
			new.tenant, new.grp, new.state, new.attempt, new.last_error, new.updated_at, new.updated_at);
	END`

// setOutboxTriggers creates the outbox's trigger when on, drops it when off.
func setOutboxTriggers(ctx context.Context, db *sql.DB, on bool) error {
	q := `DROP TRIGGER IF EXISTS outbox_flow_cascade`
	if on {
		q = outboxCascadeTrigger
	}
	_, err := db.ExecContext(ctx, q)
	return err
}
