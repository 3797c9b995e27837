package pgqueue

import (
	"context"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// List implements backend.Backend: one query walking ids in order, forwards
// or backwards (NewestFirst), stopping at a page of matches. A queue and
// state filter walks jobs_queue_state; the others walk the primary key
// and check each row.
func (s *Store) List(ctx context.Context, f queue.ListFilter) (*queue.Page, error) {
	if err := s.check("list"); err != nil {
		return nil, err
	}
	query, args, limit, err := sqlstore.ListQuery(s.lq, f)
	if err != nil {
		return nil, err
	}
	page, err := sqlstore.ListJobs(onPgx{ctx, s.pool}, query, args, limit)
	return page, s.wrap("list", err)
}
