package dashboard

import "time"

// LimitReport is GET /v1/activity/limits: per scene and policy, the
// decisions of the last Window seconds, one point per second, oldest
// first, ending with the current (partial) second.
type LimitReport struct {
	// Start is the beginning of the first second of every series.
	Start time.Time `json:"start"`
	// IntervalMS is the width of one point: 1000.
	IntervalMS int64 `json:"interval_ms"`
	// Since is when counting began (the server's start): Totals count
	// from then.
	Since    time.Time        `json:"since"`
	Policies []PolicyActivity `json:"policies"`
}

// PolicyActivity is the activity of one scene and policy.
type PolicyActivity struct {
	Scene  string `json:"scene"`
	Policy string `json:"policy"`
	// Totals count since the server started; Window sums the series.
	Totals LimitCounts `json:"totals"`
	Window LimitCounts `json:"window"`
	Series LimitSeries `json:"series"`
}

// LimitSeries holds one count per second per outcome.
type LimitSeries struct {
	Allowed      []int64 `json:"allowed"`
	Denied       []int64 `json:"denied"`
	ShadowDenied []int64 `json:"shadow_denied"`
	StoreErrors  []int64 `json:"store_errors"`
	// FailureMode counts decisions answered by the failure mode, open or
	// closed.
	FailureMode []int64 `json:"failure_mode"`
}

// Limits reports the rate-limit activity, sorted by scene and policy.
func (a *Activity) Limits() LimitReport {
	first, last := a.seconds()
	out := LimitReport{Start: time.Unix(first, 0).UTC(), IntervalMS: 1000, Since: a.started.UTC(), Policies: []PolicyActivity{}}
	a.mu.Lock()
	defer a.mu.Unlock()
	keys := sortedKeys(a.limits, func(x, y limitKey) bool {
		return x.scene < y.scene || (x.scene == y.scene && x.policy < y.policy)
	})
	for _, k := range keys {
		t := a.limits[k]
		p := PolicyActivity{Scene: k.scene, Policy: k.policy, Totals: t.total}
		s := &p.Series
		for sec := first; sec <= last; sec++ {
			c := LimitCounts{}
			if slot := t.secs.get(sec); slot != nil {
				c = *slot
			}
			p.Window.add(&c)
			s.Allowed = append(s.Allowed, c.Allowed)
			s.Denied = append(s.Denied, c.Denied)
			s.ShadowDenied = append(s.ShadowDenied, c.ShadowDenied)
			s.StoreErrors = append(s.StoreErrors, c.StoreErrors)
			s.FailureMode = append(s.FailureMode, c.FailureOpen+c.FailureClosed)
		}
		out.Policies = append(out.Policies, p)
	}
	return out
}

// QueueReport is GET /v1/activity/queues: per queue, the job events of
// the last Window seconds seen by this server, one point per second,
// oldest first, ending with the current (partial) second.
type QueueReport struct {
	Start      time.Time `json:"start"`
	IntervalMS int64     `json:"interval_ms"`
	Since      time.Time `json:"since"`
	// LatencyWindowMS is how far back each latency point looks.
	LatencyWindowMS int64           `json:"latency_window_ms"`
	Queues          []QueueActivity `json:"queues"`
}

// QueueActivity is the activity of one queue.
type QueueActivity struct {
	Queue string `json:"queue"`
	// Totals count since the server started; Window sums the series.
	Totals JobCounts   `json:"totals"`
	Window JobCounts   `json:"window"`
	Series QueueSeries `json:"series"`
	// Latency is the enqueue-to-start delay over the whole window.
	Latency LatencySummary `json:"latency"`
}

// QueueSeries holds one value per second. Finished counts jobs that
// completed or failed for good (Failed is its failed part). The latency points are
// the enqueue-to-start delay percentiles, in milliseconds, of the starts
// in the LatencyWindowMS ending at that second; null when there were none.
type QueueSeries struct {
	Enqueued     []int64    `json:"enqueued"`
	Started      []int64    `json:"started"`
	Finished     []int64    `json:"finished"`
	Failed       []int64    `json:"failed"`
	LatencyP50MS []*float64 `json:"latency_p50_ms"`
	LatencyP99MS []*float64 `json:"latency_p99_ms"`
}

// LatencySummary summarises start delays, in milliseconds (null without
// samples). Values come from log-scale buckets: within 9%.
type LatencySummary struct {
	Samples int64    `json:"samples"`
	P50MS   *float64 `json:"p50_ms"`
	P99MS   *float64 `json:"p99_ms"`
}

// Queues reports the job activity, sorted by queue.
func (a *Activity) Queues() QueueReport {
	first, last := a.seconds()
	out := QueueReport{Start: time.Unix(first, 0).UTC(), IntervalMS: 1000, Since: a.started.UTC(),
		LatencyWindowMS: int64(a.latency) * 1000, Queues: []QueueActivity{}}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, name := range sortedKeys(a.queues, func(x, y string) bool { return x < y }) {
		out.Queues = append(out.Queues, a.queueActivity(name, a.queues[name], first, last))
	}
	return out
}

func (a *Activity) queueActivity(name string, t *queueTrack, first, last int64) QueueActivity {
	q := QueueActivity{Queue: name, Totals: t.total}
	s := &q.Series
	var all hist
	for sec := first; sec <= last; sec++ {
		c := JobCounts{}
		if slot := t.secs.get(sec); slot != nil {
			c = slot.JobCounts
			all.merge(&slot.delay)
		}
		q.Window.add(&c)
		s.Enqueued = append(s.Enqueued, c.Enqueued)
		s.Started = append(s.Started, c.Started)
		s.Finished = append(s.Finished, c.Completed+c.Failed)
		s.Failed = append(s.Failed, c.Failed)
		var trailing hist
		for back := sec - int64(a.latency) + 1; back <= sec; back++ {
			if slot := t.secs.get(back); slot != nil {
				trailing.merge(&slot.delay)
			}
		}
		s.LatencyP50MS = append(s.LatencyP50MS, trailing.quantile(0.5))
		s.LatencyP99MS = append(s.LatencyP99MS, trailing.quantile(0.99))
	}
	q.Latency = LatencySummary{Samples: all.n, P50MS: all.quantile(0.5), P99MS: all.quantile(0.99)}
	return q
}
