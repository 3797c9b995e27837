package pgqueue

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// trigger is one trigger on the jobs table that an option turns on: the
// store creates it at Open while the option is set and drops it while it
// is not, so the schema records what the last store to open it asked for
// (as the SQLite store's file does). Its function comes from the
// migrations.
type trigger struct {
	name string
	ddl  string // CREATE TRIGGER; __schema__ and __channel__ are replaced
}

// outboxTriggers write the outbox (Options.Outbox): the event of every job
// that reaches a final state, by an update or stored in one at once. The
// WHEN clauses keep every other change from calling them.
var outboxTriggers = []trigger{
	{"outbox_job_final", `CREATE TRIGGER outbox_job_final
		AFTER UPDATE OF state ON __schema__.jobs FOR EACH ROW
		WHEN (NEW.state IN ('completed', 'failed', 'cancelled') AND OLD.state NOT IN ('completed', 'failed', 'cancelled'))
		EXECUTE FUNCTION __schema__.outbox_job_final()`},
	{"outbox_job_stored_final", `CREATE TRIGGER outbox_job_stored_final
		AFTER INSERT ON __schema__.jobs FOR EACH ROW
		WHEN (NEW.state IN ('completed', 'failed', 'cancelled'))
		EXECUTE FUNCTION __schema__.outbox_job_final()`},
}

// eventTriggers write the event log (Options.Events). New jobs are logged
// by a statement trigger, one call for a whole batch; starts and final
// states by a row trigger whose WHEN clause keeps every other update from
// calling it.
var eventTriggers = []trigger{
	{"event_log_enqueued", `CREATE TRIGGER event_log_enqueued
		AFTER INSERT ON __schema__.jobs REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT
		EXECUTE FUNCTION __schema__.event_log_enqueued(__channel__)`},
	{"event_log_moved", `CREATE TRIGGER event_log_moved
		AFTER UPDATE OF state ON __schema__.jobs FOR EACH ROW
		WHEN (NEW.state <> OLD.state AND NEW.state IN ('active', 'completed', 'failed', 'cancelled'))
		EXECUTE FUNCTION __schema__.event_log_moved(__channel__)`},
}

// syncTriggers creates the triggers of the options that are on and drops
// those of the options that are off. When the schema already matches, it
// only reads the catalog; a change runs in one transaction under an
// advisory lock, so stores opening together do not race.
func syncTriggers(ctx context.Context, pool *pgxpool.Pool, schema string, opts Options) error {
	want := map[string]string{}
	var all []string
	for _, set := range []struct {
		on bool
		ts []trigger
	}{{opts.Outbox, outboxTriggers}, {opts.Events, eventTriggers}} {
		for _, t := range set.ts {
			all = append(all, t.name)
			if set.on {
				want[t.name] = t.ddl
			}
		}
	}
	table := pgx.Identifier{schema, "jobs"}.Sanitize()
	have, err := triggersOn(ctx, pool, table, all)
	if err != nil || sameTriggers(have, want) {
		return wrapTriggers(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "sluice.triggers."+schema); err != nil {
			return err
		}
		// The DDL waits for the transactions writing jobs, and the new
		// ones wait behind it: fail rather than stall them long.
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '10s'`); err != nil {
			return err
		}
		have, err := triggersOn(ctx, tx, table, all)
		if err != nil {
			return err
		}
		for _, name := range all {
			ddl, on := want[name]
			var stmt string
			switch {
			case on && !slices.Contains(have, name):
				stmt = strings.ReplaceAll(qualify(ddl, schema), "__channel__", quoteLiteral(channelName(schema)))
			case !on && slices.Contains(have, name):
				stmt = `DROP TRIGGER ` + pgx.Identifier{name}.Sanitize() + ` ON ` + table
			default:
				continue
			}
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	return wrapTriggers(err)
}

func wrapTriggers(err error) error {
	if err != nil {
		return fmt.Errorf("pgqueue: set the outbox and event log triggers: %w", err)
	}
	return nil
}

// triggersOn lists which of names are triggers on table.
func triggersOn(ctx context.Context, db pgxQuerier, table string, names []string) ([]string, error) {
	var have []string
	err := db.QueryRow(ctx, `SELECT coalesce(array_agg(tgname::text), '{}') FROM pg_trigger
		WHERE tgrelid = $1::regclass AND tgname = ANY($2)`, table, names).Scan(&have)
	return have, err
}

// sameTriggers reports whether have is exactly the names of want.
func sameTriggers(have []string, want map[string]string) bool {
	if len(have) != len(want) {
		return false
	}
	for _, n := range have {
		if _, ok := want[n]; !ok {
			return false
		}
	}
	return true
}

// quoteLiteral quotes s as an SQL string literal (standard conforming
// strings, the default since Postgres 9.1).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
