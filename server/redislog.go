package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// redisLogEvery is the least time between two lines of one kind from
// go-redis: during an outage it would otherwise log every failed dial.
const redisLogEvery = 10 * time.Second

// redisLogger passes go-redis's own log lines (failed dials, dropped
// pub/sub connections) to the server's logger as warnings, so that they
// share its format, at most one line of each kind (format string) per
// redisLogEvery; the next one says how many were left out.
type redisLogger struct {
	log *slog.Logger
	now func() time.Time

	mu    sync.Mutex
	kinds map[string]*redisLogKind
}

type redisLogKind struct {
	last    time.Time
	skipped int
}

func newRedisLogger(log *slog.Logger) *redisLogger {
	return &redisLogger{log: log, now: time.Now, kinds: map[string]*redisLogKind{}}
}

// Printf implements go-redis's logging interface.
func (l *redisLogger) Printf(ctx context.Context, format string, v ...any) {
	now := l.now()
	l.mu.Lock()
	k := l.kinds[format]
	if k == nil {
		if len(l.kinds) >= 256 { // formats are go-redis's constants: bound the map all the same
			clear(l.kinds)
		}
		k = &redisLogKind{}
		l.kinds[format] = k
	}
	if !k.last.IsZero() && now.Sub(k.last) < redisLogEvery {
		k.skipped++
		l.mu.Unlock()
		return
	}
	skipped := k.skipped
	k.last, k.skipped = now, 0
	l.mu.Unlock()
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	if !strings.HasPrefix(msg, "redis: ") {
		msg = "redis: " + msg
	}
	attrs := []slog.Attr{slog.String("source", "go-redis")}
	if skipped > 0 {
		attrs = append(attrs, slog.Int("similar_lines_left_out", skipped))
	}
	l.log.LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
}
