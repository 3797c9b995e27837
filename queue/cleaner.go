package queue

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue/backend"
)

// CleanerConfig configures a Cleaner. The zero value is the default.
type CleanerConfig struct {
	// Queues to clean; default all queues.
	Queues []string
	// Retention per final state; zero fields are the defaults (completed
	// 24h, failed 7 days, cancelled 24h), negative ones keep forever.
	Retention Retention
	// Interval between cleaning rounds; default 1 minute.
	Interval time.Duration
	// Batch is how many jobs one backend call deletes at most; default
	// DefaultBatchLimit (1000). A round repeats calls until a call
	// deletes fewer, so a steady load cannot outgrow the cleaner.
	Batch int
	// Clock drives the interval; default the real clock.
	Clock clock.Clock
	// Logger receives backend faults; default slog.Default().
	Logger *slog.Logger
}

// Cleaner deletes finished jobs once their retention has passed, so that
// storage does not grow without bound. Workers run one for their queues
// (WorkerConfig.CleanupEvery); run a Cleaner on its own when they do not.
type Cleaner struct {
	b   backend.Backend
	cfg CleanerConfig
}

// NewCleaner returns a cleaner on b.
func NewCleaner(b backend.Backend, cfg CleanerConfig) *Cleaner {
	cfg.Retention = cfg.Retention.WithDefaults()
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	if cfg.Batch <= 0 {
		cfg.Batch = backend.DefaultBatchLimit
	}
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Cleaner{b: b, cfg: cfg}
}

// Clean runs one round: it deletes expired finished jobs, one bounded batch
// per backend call, until a call deletes less than a full batch or ctx
// ends. It returns how many jobs it deleted.
func (c *Cleaner) Clean(ctx context.Context) (int, error) {
	total := 0
	for ctx.Err() == nil {
		n, err := c.b.Cleanup(ctx, backend.CleanupRequest{Queues: c.cfg.Queues, Retention: c.cfg.Retention, Limit: c.cfg.Batch})
		total += n
		if err != nil {
			return total, err
		}
		if n < c.cfg.Batch {
			break
		}
	}
	return total, ctx.Err()
}

// Run cleans once at start and then every Interval until ctx ends; it
// returns nil then. Backend faults are logged and the next round retries.
func (c *Cleaner) Run(ctx context.Context) error {
	for {
		if _, err := c.Clean(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Error("queue: cleanup failed", "err", err)
		}
		t := c.cfg.Clock.NewTimer(c.cfg.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}
