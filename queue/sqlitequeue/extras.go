package sqlitequeue

import (
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// A job's webhook and trace context ride in their own columns, written by
// a second statement of the enqueue's transaction only when a spec has
// them, so a plain job pays nothing for them.
var (
	qJobExtras   = hot(`UPDATE jobs SET webhook = ?, trace = ? WHERE id = ?`)
	qGroupExtras = hot(`UPDATE job_groups SET webhook = ? WHERE id = ?`)
)

// storeExtras writes j's webhook and trace context to row id, inside the
// enqueue's operation.
func (s *sched) storeExtras(id int64, j *queue.Job) error {
	if j.Webhook == nil && j.Trace == "" {
		return nil
	}
	_, err := s.tx.exec(qJobExtras, backend.EncodeWebhook(j.Webhook), j.Trace, id)
	return err
}

// storeGroupExtras writes a new group's webhook, inside CreateGroup's
// operation.
func (s *sched) storeGroupExtras(spec queue.GroupSpec) error {
	if spec.Webhook == nil {
		return nil
	}
	_, err := s.tx.exec(qGroupExtras, backend.EncodeWebhook(spec.Webhook), spec.ID)
	return err
}

// setExtras fills the fields read from the extras columns.
func setExtras(spec *queue.JobSpec, webhook, trace string) error {
	w, err := backend.DecodeWebhook(webhook)
	if err != nil {
		return err
	}
	spec.Webhook, spec.Trace = w, trace
	return nil
}
