package config

// SQLiteTuning tunes the embedded job store (sqlitequeue.Options). Zero
// fields are the library's defaults.
type SQLiteTuning struct {
	// BusyTimeout is how long a write waits for another process holding
	// the file's write lock; default 5s.
	BusyTimeout Duration `yaml:"busy_timeout"`
	// ReadConns bounds the connections used for reads; default 4.
	ReadConns int `yaml:"read_conns"`
	// Durable syncs the file on every commit, so a committed transition
	// survives a power cut, at a cost in speed; default false (every
	// commit survives a process crash).
	Durable bool `yaml:"durable"`
}

// RedisQueueTuning tunes the Redis job store (redisqueue.Options). Zero
// fields are the library's defaults.
type RedisQueueTuning struct {
	// DisableBatching sends every call as its own round trip instead of
	// gathering concurrent calls into pipelines; default false.
	DisableBatching bool `yaml:"disable_batching"`
	// MaxBatch caps the calls in one pipeline; default 256.
	MaxBatch int `yaml:"max_batch"`
	// Senders is how many pipelines may be in flight at once; default 2.
	Senders int `yaml:"senders"`
	// CompleteLinger is how long a worker's completion of a job may wait
	// to share a round trip with the next call; default 2ms; negative:
	// sent at once.
	CompleteLinger Duration `yaml:"complete_linger"`
	// EnqueueLinger is how long an enqueue may wait for others into the
	// same queue to run with it as one script; default 0: none.
	EnqueueLinger Duration `yaml:"enqueue_linger"`
}

// RedisLimitsTuning tunes the Redis rate-limit store (redislimit.Options).
// Zero fields are the library's defaults.
type RedisLimitsTuning struct {
	// DisableBatching sends every decision as its own round trip;
	// default false.
	DisableBatching bool `yaml:"disable_batching"`
	// MaxBatch caps the decisions in one pipeline; default 128.
	MaxBatch int `yaml:"max_batch"`
	// Pipelines is how many batches may be in flight at once; default 2.
	Pipelines int `yaml:"pipelines"`
	// DenyCache answers a repeat of a denied request from memory until
	// it could be allowed again; default false. It never admits more
	// than Redis would, but may deny a little longer.
	DenyCache bool `yaml:"deny_cache"`
	// DenyCacheSize caps the cached denials; default 65536.
	DenyCacheSize int `yaml:"deny_cache_size"`
}

// RedisBreaker tunes the circuit breaker on the Redis client, shared by
// the counters and the jobs. Zero fields are the library's defaults.
type RedisBreaker struct {
	// Failures is how many consecutive commands must fail for want of
	// Redis to open the breaker; default 3.
	Failures int `yaml:"failures"`
	// ProbeInterval is the least time between two probes while open, and
	// bounds each probe's PING; default 250ms.
	ProbeInterval Duration `yaml:"probe_interval"`
}

// MemoryLimitsTuning tunes the in-process rate-limit store
// (memlimit.Options). Zero fields are the library's defaults.
type MemoryLimitsTuning struct {
	// Shards is the number of independently locked maps, rounded up to a
	// power of two; default 64.
	Shards int `yaml:"shards"`
	// MaxKeys bounds the counters held; past it the least recently used
	// is forgotten; default 1,000,000.
	MaxKeys int `yaml:"max_keys"`
	// SweepInterval is how often expired counters are dropped; default
	// 1m; negative: never (memory stays at its high-water mark, still
	// bounded by MaxKeys).
	SweepInterval Duration `yaml:"sweep_interval"`
}

// MaxShards bounds MemoryLimitsTuning.Shards: more buys nothing on any
// machine and each costs memory up front.
const MaxShards = 1 << 16

func (v *validator) storageTuning(s *Storage) {
	base := []any{"storage"}
	v.nonNegativeDuration(p(base, "sqlite", "busy_timeout"), s.SQLite.BusyTimeout)
	v.nonNegative(p(base, "sqlite", "read_conns"), int64(s.SQLite.ReadConns))
	v.nonNegative(p(base, "redis_queue", "max_batch"), int64(s.RedisQueue.MaxBatch))
	v.nonNegative(p(base, "redis_queue", "senders"), int64(s.RedisQueue.Senders))
	l := s.RedisLimits
	v.nonNegative(p(base, "redis_limits", "max_batch"), int64(l.MaxBatch))
	v.nonNegative(p(base, "redis_limits", "pipelines"), int64(l.Pipelines))
	v.nonNegative(p(base, "redis_limits", "deny_cache_size"), int64(l.DenyCacheSize))
	if l.DenyCacheSize > 0 && !l.DenyCache {
		v.add(p(base, "redis_limits", "deny_cache_size"), "only applies with deny_cache: true")
	}
	v.nonNegative(p(base, "redis_breaker", "failures"), int64(s.RedisBreaker.Failures))
	v.nonNegativeDuration(p(base, "redis_breaker", "probe_interval"), s.RedisBreaker.ProbeInterval)
	m := s.MemoryLimits
	if m.Shards < 0 || m.Shards > MaxShards {
		v.add(p(base, "memory_limits", "shards"), "must be from 0 (default 64) to %d, got %d", MaxShards, m.Shards)
	}
	v.nonNegative(p(base, "memory_limits", "max_keys"), int64(m.MaxKeys))
}
