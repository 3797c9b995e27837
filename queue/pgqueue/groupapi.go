package pgqueue

import (
	"context"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.GroupBackend = (*Store)(nil)

// CreateGroup implements backend.GroupBackend (sqlstore's CreateGroup).
func (s *Store) CreateGroup(ctx context.Context, spec queue.GroupSpec) (*queue.GroupProgress, error) {
	var p *queue.GroupProgress
	err := s.schedTx(ctx, "create group", func(sc *sched) error {
		var err error
		p, err = sc.CreateGroup(spec)
		return err
	})
	return p, err
}

// Group implements backend.GroupBackend. It reads the row and the counts in
// one transaction, so they agree.
func (s *Store) Group(ctx context.Context, id string) (*queue.GroupProgress, error) {
	var p *queue.GroupProgress
	err := s.schedTx(ctx, "group", func(sc *sched) error {
		var err error
		p, err = sc.GroupProgress(id)
		return err
	})
	return p, err
}

// CancelGroup implements backend.GroupBackend.
func (s *Store) CancelGroup(ctx context.Context, id string) (*queue.GroupProgress, error) {
	var p *queue.GroupProgress
	err := s.schedTx(ctx, "cancel group", func(sc *sched) error {
		if err := sc.CancelGroup(id); err != nil {
			return err
		}
		var err error
		p, err = sc.GroupProgress(id)
		return err
	})
	return p, err
}
