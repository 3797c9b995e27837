package server

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// faultLogEvery is the least time between two lines of one kind of store
// fault: during an outage every request fails the same way, and a line
// each would bury the log (a Postgres outage of 25 s made over a thousand).
const faultLogEvery = 10 * time.Second

// logLimiter lets through, for each kind of line, the first one and then
// one per faultLogEvery, counting those it held back so that the next one
// says how many were left out.
type logLimiter struct {
	mu    sync.Mutex
	kinds map[string]*limitedKind
}

type limitedKind struct {
	last    time.Time
	skipped int
}

// allow reports whether a line of kind seen at now is written, and how
// many lines of that kind were left out before it.
func (l *logLimiter) allow(kind string, now time.Time) (ok bool, skipped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.kinds[kind]
	if k == nil {
		if l.kinds == nil || len(l.kinds) >= 256 { // kinds are the code's constants: bound the map all the same
			l.kinds = map[string]*limitedKind{}
		}
		k = &limitedKind{}
		l.kinds[kind] = k
	}
	if !k.last.IsZero() && now.Sub(k.last) < faultLogEvery {
		k.skipped++
		return false, 0
	}
	skipped, k.last, k.skipped = k.skipped, now, 0
	return true, skipped
}

// logFault writes a store fault's line at level, at most one per
// faultLogEvery for each msg (see logLimiter); the line says how many
// similar ones were left out since the last.
func (s *Server) logFault(ctx context.Context, level slog.Level, msg string, args ...any) {
	ok, skipped := s.faults.allow(msg, s.clock.Now())
	if !ok {
		return
	}
	if skipped > 0 {
		args = append(args, "similar_lines_left_out", skipped)
	}
	s.log.Log(ctx, level, msg, args...)
}
