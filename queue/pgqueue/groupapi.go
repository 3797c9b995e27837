package pgqueue

import (
	"context"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.GroupBackend = (*Store)(nil)

// CreateGroup implements backend.GroupBackend.
func (s *Store) CreateGroup(ctx context.Context, spec queue.GroupSpec) (*queue.GroupProgress, error) {
	var p *queue.GroupProgress
	err := s.schedTx(ctx, "create group", func(sc *sched) error {
		if err := sc.lock(kindGroup, spec.ID); err != nil {
			return err
		}
		deadline := int64(0)
		if spec.TTL > 0 {
			deadline = after(sc.now, spec.TTL)
		}
		var one int
		err := sc.row(`INSERT INTO __schema__.job_groups (id, tenant, max_conc, min_interval, ttl, deadline,
			completion_kind, completion_queue, completion_payload, webhook, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING RETURNING 1`,
			spec.ID, spec.Tenant, spec.MaxConcurrency, int64(spec.MinInterval), int64(spec.TTL), deadline,
			spec.CompletionKind, spec.CompletionQueue, spec.CompletionPayload, backend.EncodeWebhook(spec.Webhook), sc.now).Scan(&one)
		if isNoRows(err) {
			return errorf(queue.ErrGroupExists, "group %s", spec.ID)
		}
		if err != nil {
			return err
		}
		p, err = sc.progress(spec.ID)
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
		p, err = sc.progress(id)
		return err
	})
	return p, err
}

// CancelGroup implements backend.GroupBackend.
func (s *Store) CancelGroup(ctx context.Context, id string) (*queue.GroupProgress, error) {
	var p *queue.GroupProgress
	err := s.schedTx(ctx, "cancel group", func(sc *sched) error {
		if err := sc.cancelGroup(id); err != nil {
			return err
		}
		var err error
		p, err = sc.progress(id)
		return err
	})
	return p, err
}
