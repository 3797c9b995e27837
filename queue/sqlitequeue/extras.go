package sqlitequeue

import (
	"github.com/sluicehq/sluice/queue"
)

// A job's webhook and trace context ride in their own columns, written by
// a second statement of the enqueue's transaction only when a spec has
// them, so a plain job pays nothing for them.
var qJobExtras = hot(`UPDATE jobs SET webhook = ?, trace = ? WHERE id = ?`)

// storeExtras writes j's webhook and trace context to row id, inside the
// enqueue's operation.
func (s *sched) storeExtras(id int64, j *queue.Job) error {
	if j.Webhook == nil && j.Trace == "" {
		return nil
	}
	_, err := s.tx.exec(qJobExtras, queue.EncodeWebhook(j.Webhook), j.Trace, id)
	return err
}

// setExtras fills the fields read from the extras columns.
func setExtras(spec *queue.JobSpec, webhook, trace string) error {
	w, err := queue.DecodeWebhook(webhook)
	if err != nil {
		return err
	}
	spec.Webhook, spec.Trace = w, trace
	return nil
}
