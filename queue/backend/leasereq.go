package backend

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// Bounds of a LeaseRequest.
const (
	// MaxLeaseQueues bounds how many queues one LeaseRequest names.
	MaxLeaseQueues = 100
	// MaxWorkerIDLen bounds LeaseRequest.WorkerID, in bytes.
	MaxWorkerIDLen = 200
)

// Validate returns an *InvalidArgumentError naming the first field of r
// that breaks a rule: from 1 to MaxLeaseQueues queues, each a valid queue
// name; a WorkerID of at most MaxWorkerIDLen bytes of valid UTF-8 without
// control characters; Max at least 1; LeaseFor positive.
func (r LeaseRequest) Validate() error {
	switch {
	case len(r.Queues) == 0:
		return queuetype.InvalidArgument(queuetype.Field("LeaseRequest", "Queues"), "must name at least one queue")
	case len(r.Queues) > MaxLeaseQueues:
		return queuetype.InvalidArgument(queuetype.Field("LeaseRequest", "Queues"), "must name at most %d queues, got %d", MaxLeaseQueues, len(r.Queues))
	}
	for i, q := range r.Queues {
		if err := queuetype.ValidName(queuetype.Field("LeaseRequest", fmt.Sprintf("Queues[%d]", i)), q, true); err != nil {
			return err
		}
	}
	if err := validWorkerID(r.WorkerID); err != nil {
		return err
	}
	if r.Max < 1 {
		return queuetype.InvalidArgument(queuetype.Field("LeaseRequest", "Max"), "must be at least 1, got %d", r.Max)
	}
	if r.LeaseFor <= 0 {
		return queuetype.InvalidArgument(queuetype.Field("LeaseRequest", "LeaseFor"), "must be positive, got %s", r.LeaseFor)
	}
	return nil
}

func validWorkerID(id string) error {
	f := queuetype.Field("LeaseRequest", "WorkerID")
	if len(id) > MaxWorkerIDLen {
		return queuetype.InvalidArgument(f, "must be at most %d bytes, got %d", MaxWorkerIDLen, len(id))
	}
	if err := queuetype.CheckText(f, id); err != nil {
		return err
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return queuetype.InvalidArgument(f, "must not contain control characters, got %q", id)
		}
	}
	if id != "" && strings.TrimSpace(id) == "" {
		return queuetype.InvalidArgument(f, "must not be blank (only spaces), got %q", id)
	}
	return nil
}
