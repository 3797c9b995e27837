package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// redisLogEvery is the least time between two lines of one kind from
// go-redis: during an outage it would otherwise log every failed dial.
const redisLogEvery = faultLogEvery

// redisLogger passes go-redis's own log lines (failed dials, dropped
// pub/sub connections) to the server's logger as warnings, so that they
// share its format, at most one line of each kind (format string) per
// redisLogEvery; the next one says how many were left out.
type redisLogger struct {
	log   *slog.Logger
	now   func() time.Time
	kinds logLimiter
}

func newRedisLogger(log *slog.Logger) *redisLogger {
	return &redisLogger{log: log, now: time.Now}
}

// Printf implements go-redis's logging interface.
func (l *redisLogger) Printf(ctx context.Context, format string, v ...any) {
	ok, skipped := l.kinds.allow(format, l.now())
	if !ok {
		return
	}
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
