package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"
	"strconv"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// insertJob takes sqlstore.InsertArgs, then updated_at (the same time)
// and the scheduling columns. Its parameters are anonymous: numbered
// ones cost the driver a look-up each.
var insertJob = hot(`INSERT INTO jobs (queue, kind, payload, tenant, grp, priority, run_at,
	max_attempts, timeout, state, webhook, trace, created_at, unique_key, unique_until, updated_at,
	hold, vstart, band, vrank, wait_until)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)

// The key is held by a job whose window has not ended, or, without a
// window, by a job that has not finished.
var findUnique = hot(`SELECT ` + jobCols + ` FROM jobs
	WHERE queue = ? AND unique_key = ?
	AND ((unique_until IS NULL AND state NOT IN ('completed', 'failed', 'cancelled')) OR unique_until > ?)
	ORDER BY id DESC LIMIT 1`)

// Enqueue implements backend.Backend.
func (b *Backend) Enqueue(ctx context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	out := make([]queue.Enqueued, len(specs))
	err := b.writeSched(ctx, "enqueue", func(s *sched) error {
		for i, spec := range specs {
			j, dup, err := s.insertSpec(spec, true)
			if err != nil {
				return err
			}
			out[i] = queue.Enqueued{Job: j, Duplicate: dup}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// insert stores spec as a new job, or returns the job holding its unique
// key.
func (s *sched) insert(spec queue.JobSpec, checkBacklog bool) (*queue.Job, error) {
	j, _, err := s.insertSpec(spec, checkBacklog)
	return j, err
}

// insertSpec stores spec as a new job inside the operation, or returns the
// job that holds its unique key and dup = true. A job ready at once gets
// its fair tag and goes pending, or waiting when its tenant or group has
// no room; with checkBacklog, a tenant's full backlog refuses it.
func (s *sched) insertSpec(spec queue.JobSpec, checkBacklog bool) (*queue.Job, bool, error) {
	if spec.UniqueKey != "" {
		j, err := sqlstore.ScanJob(s.tx.queryRow(findUnique, spec.Queue, spec.UniqueKey, s.now))
		if err == nil {
			return j, true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, false, err
		}
	}
	if spec.Group != "" {
		if err := s.JoinGroup(spec.Group); err != nil {
			return nil, false, err
		}
	}
	j := sqlstore.NewJob(spec, s.now)
	deps, err := s.depsOf(j)
	if err != nil {
		return nil, false, err
	}
	pl, err := s.PlaceNew(j.Queue, j.Tenant, j.Group, j.Priority, j.State == queue.StatePending, checkBacklog)
	if err != nil {
		return nil, false, err
	}
	if pl.Hold != "" {
		j.State = queue.StateWaiting
	}
	res, err := s.tx.exec(insertJob, sqlstore.InsertArgs(j, sqlstore.ToNanos(j.CreatedAt), pl.Hold, pl.VStart, pl.Band, pl.Rank, pl.WaitUntil)...)
	if err != nil {
		return nil, false, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, false, err
	}
	j.ID = strconv.FormatInt(id, 10)
	if err := s.linkDeps(id, j, deps); err != nil {
		return nil, false, err
	}
	if j.State == queue.StatePending {
		s.ReadyQueue(j.Queue)
	}
	return j, false, nil
}
