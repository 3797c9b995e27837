package pgqueue

import (
	"strconv"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// scoped reports whether a spec has a tenant or group: its job is placed
// by the scheduler, under its scopes' locks.
func scoped(sp queue.JobSpec) bool { return sp.Tenant != "" || sp.Group != "" }

// hasDeps reports whether a spec has parents: its batch locks them.
func hasDeps(specs []queue.JobSpec) bool {
	for _, sp := range specs {
		if len(sp.DependsOn) > 0 {
			return true
		}
	}
	return false
}

func hasScoped(specs []queue.JobSpec) bool {
	for _, sp := range specs {
		if scoped(sp) {
			return true
		}
	}
	return false
}

// qInsertScoped stores a job with its placement.
const qInsertScoped = `INSERT INTO __schema__.jobs (queue, kind, payload, tenant, grp, priority, run_at, max_attempts,
	timeout, state, webhook, trace, created_at, updated_at, unique_key, unique_until,
	hold, vstart, vfinish, band, vrank, wait_until)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $14, $15, $16, $17, $18, $19, $20, $21)
	RETURNING id`

// insert stores j (from sqlstore.NewJob, its unique key already free) under its
// scopes' locks: a job ready at once gets its fair tag and goes pending,
// or waiting when its tenant has no room; with checkBacklog, a tenant's
// full backlog refuses it.
func (sc *sched) insert(j *queue.Job, checkBacklog bool) error {
	if err := sc.lockScopes(j.Tenant, j.Group); err != nil {
		return err
	}
	if err := sc.JoinGroup(j.Group); err != nil {
		return err
	}
	pl, err := sc.PlaceNew(j.Queue, j.Tenant, j.Group, j.Priority, j.State == queue.StatePending, checkBacklog)
	if err != nil {
		return err
	}
	if pl.Hold != "" {
		j.State = queue.StateWaiting
	}
	args := sqlstore.InsertArgs(j)
	// sqlstore.InsertArgs is in insertOne's order: the first 13, then the key.
	vals := append(append([]any{}, args[:13]...), args[13], args[14], pl.Hold, pl.VStart, pl.VFinish, pl.Band, pl.Rank, pl.WaitUntil)
	var id int64
	if err := sc.row(qInsertScoped, vals...).Scan(&id); err != nil {
		return err
	}
	j.ID = strconv.FormatInt(id, 10)
	return nil
}
