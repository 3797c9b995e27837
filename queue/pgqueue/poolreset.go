package pgqueue

import (
	"errors"
	"io"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// resetEvery bounds how often a lost server empties the pool.
const resetEvery = time.Second

// noteFault empties the pool when err says the server went away (it shut
// down, restarted or dropped the connection). Every connection the pool
// held then is dead, but the pool finds that out only by using each one,
// a failed call apiece, or after a second idle: a worker whose lease is
// the call that meets one waits a whole poll interval before it looks for
// work again. Emptying the pool at the first sign makes the next call
// dial a fresh connection. At most once per resetEvery, so an outage
// failing many calls at once resets once.
func (s *Store) noteFault(err error) {
	if !serverGone(err) {
		return
	}
	now := time.Now().UnixNano() // wall time: a rate limit, not a schedule
	last := s.resetAt.Load()
	if now-last < int64(resetEvery) || !s.resetAt.CompareAndSwap(last, now) {
		return
	}
	s.pool.Reset()
}

// serverGone reports whether err is the server closing the session
// (admin_shutdown, crash_shutdown, cannot_connect_now) or the connection
// failing under a call.
func serverGone(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
