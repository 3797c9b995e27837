package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"
	"strconv"

	"github.com/sluicehq/sluice/queue"
)

var insertJob = hot(`INSERT INTO jobs (queue, kind, payload, tenant, grp, priority, run_at,
	max_attempts, timeout, unique_key, unique_until, state, created_at, updated_at,
	hold, vstart, band, vrank, wait_until)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)

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

// placement is where a new job goes in the scheduling columns.
type placement struct {
	hold                string
	vstart              sql.NullInt64
	band, rank, waitEnd int64
}

// insertSpec stores spec as a new job inside the operation, or returns the
// job that holds its unique key and dup = true. A job ready at once gets
// its fair tag and goes pending, or waiting when its tenant or group has
// no room; with checkBacklog, a tenant's full backlog refuses it.
func (s *sched) insertSpec(spec queue.JobSpec, checkBacklog bool) (*queue.Job, bool, error) {
	if spec.UniqueKey != "" {
		j, err := scanJob(s.tx.queryRow(findUnique, spec.Queue, spec.UniqueKey, s.now))
		if err == nil {
			return j, true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, false, err
		}
	}
	if spec.Group != "" {
		if err := s.joinGroup(spec.Group); err != nil {
			return nil, false, err
		}
	}
	j := newJob(spec, s.now)
	deps, err := s.depsOf(j)
	if err != nil {
		return nil, false, err
	}
	var pl placement
	if j.State == queue.StatePending {
		var err error
		if pl, err = s.placeNew(j, checkBacklog); err != nil {
			return nil, false, err
		}
		if pl.hold != "" {
			j.State = queue.StateWaiting
		}
	}
	res, err := s.tx.exec(insertJob, append(insertArgs(j), pl.hold, pl.vstart, pl.band, pl.rank, pl.waitEnd)...)
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
	if err := s.storeExtras(id, j); err != nil {
		return nil, false, err
	}
	if j.State == queue.StatePending {
		s.readyQueue(j.Queue)
	}
	return j, false, nil
}

// placeNew tags a job that is ready as it is stored and decides whether
// it waits.
func (s *sched) placeNew(j *queue.Job, checkBacklog bool) (placement, error) {
	var pl placement
	start, band, rank, err := s.tag(j.Queue, j.Tenant, j.Priority)
	if err != nil {
		return pl, err
	}
	pl.vstart, pl.band, pl.rank = sql.NullInt64{Int64: start, Valid: true}, band, rank
	if j.Tenant == "" && j.Group == "" {
		return pl, nil
	}
	if checkBacklog && j.Tenant != "" {
		if err := s.checkBacklog(j.Tenant); err != nil {
			return pl, err
		}
	}
	if pl.hold, err = s.holdFor(j.Tenant, j.Group, false); err != nil || pl.hold == "" {
		return pl, err
	}
	pl.waitEnd, err = s.waitUntil(j.Tenant)
	return pl, err
}

// checkBacklog refuses one more ready job of tenant when its pending and
// waiting jobs are at its backlog cap.
func (s *sched) checkBacklog(tenant string) error {
	t, err := s.tenant(tenant)
	if err != nil || t.eff.Backlog == queue.Unlimited {
		return err
	}
	c, err := s.counts(kindTenant, tenant)
	if err != nil {
		return err
	}
	if n := c[queue.StatePending] + c[queue.StateWaiting]; n >= int64(t.eff.Backlog) {
		return &queue.BacklogFullError{Tenant: tenant, Backlog: n, Cap: int64(t.eff.Backlog)}
	}
	return nil
}

// newJob is the job a spec becomes when stored at now (without its id).
func newJob(s queue.JobSpec, now int64) *queue.Job {
	j := &queue.Job{JobSpec: s, State: queue.StatePending}
	if s.MaxAttempts <= 0 {
		j.MaxAttempts = queue.DefaultMaxAttempts
	}
	if s.UniqueKey == "" {
		j.UniqueFor = 0
	}
	if j.Payload == nil {
		j.Payload = []byte{}
	}
	j.CreatedAt = fromNanos(now)
	j.UpdatedAt = j.CreatedAt
	if toNanos(s.RunAt) > now {
		j.State = queue.StateScheduled
		j.RunAt = s.RunAt.UTC()
	} else {
		j.RunAt = j.CreatedAt
	}
	return j
}

func insertArgs(j *queue.Job) []any {
	now := toNanos(j.CreatedAt)
	var uniqueUntil sql.NullInt64
	if j.UniqueKey != "" && j.UniqueFor > 0 {
		uniqueUntil = sql.NullInt64{Int64: now + int64(j.UniqueFor), Valid: true}
	}
	return []any{j.Queue, j.Kind, j.Payload, j.Tenant, j.Group, j.Priority, toNanos(j.RunAt),
		j.MaxAttempts, int64(j.Timeout), nullString(j.UniqueKey), uniqueUntil, string(j.State), now, now}
}
