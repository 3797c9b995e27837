package sqlitequeue

import (
	"github.com/sluicehq/sluice/queue"
)

// A group's webhook rides in its own column, written by a second
// statement of CreateGroup's transaction only when the spec has one.
var qGroupExtras = hot(`UPDATE job_groups SET webhook = ? WHERE id = ?`)

// storeGroupExtras writes a new group's webhook, inside CreateGroup's
// operation.
func (s *sched) storeGroupExtras(spec queue.GroupSpec) error {
	if spec.Webhook == nil {
		return nil
	}
	_, err := s.tx.exec(qGroupExtras, queue.EncodeWebhook(spec.Webhook), spec.ID)
	return err
}
