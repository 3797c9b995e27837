package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/sluicehq/sluice/server/config"
)

// printQueueSettings prints what the queue settings of cfg come to: the
// effective settings of each queue named in per_queue and of every other
// queue, and which of start rates, priority and the overload monitor are
// on.
func printQueueSettings(w io.Writer, cfg *config.Config) {
	q := &cfg.Queues
	names := make([]string, 0, len(q.PerQueue))
	for n := range q.PerQueue {
		names = append(names, n)
	}
	sort.Strings(names)
	line := func(label string, e config.Effective) {
		fmt.Fprintf(w, "  queue %s: lease %s, max_attempts %d, max_stalls %d, backoff %s..%s, retention %s/%s/%s",
			label, e.Lease, e.MaxAttempts, e.MaxStalls, e.BackoffBase, e.BackoffMax,
			e.Retention.Completed, e.Retention.Failed, e.Retention.Cancelled)
		if e.Aging > 0 {
			fmt.Fprintf(w, ", aging %d", e.Aging)
		}
		fmt.Fprintln(w)
	}
	line("(every other)", q.For(""))
	for _, n := range names {
		line(n, q.For(n))
	}
	var on []string
	if q.StartRates.Set() {
		on = append(on, "start rates")
	}
	if q.Priority.Enabled {
		on = append(on, fmt.Sprintf("load priority (base %d, default tier %s)", q.Priority.BaseOrDefault(), q.Priority.DefaultTierName()))
	}
	if q.Overload.Enabled {
		on = append(on, "overload monitor")
	}
	if len(on) > 0 {
		fmt.Fprintf(w, "  on: %s\n", strings.Join(on, ", "))
	}
}
