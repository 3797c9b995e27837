package queue

import (
	"errors"
)

// ErrOutboxOff means the backend implements Outbox but was opened with its
// outbox off, so it records no events.
var ErrOutboxOff = errors.New("queue: the backend's event outbox is off")
