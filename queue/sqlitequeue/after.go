package sqlitequeue

import (
	"time"

	"github.com/sluicehq/sluice/queue"
)

// after is the store time d after now, with d bounded to [0, MaxDuration]
// so a huge duration from a caller (a lease, a retry delay, a pause) can
// never overflow into the past and run the job at once. Redis bounds its
// script arguments the same way, so both stores agree on such calls.
func after(now int64, d time.Duration) int64 {
	return now + int64(min(max(d, 0), queue.MaxDuration))
}
