package pgqueue

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/queue"
)

// Postgres refuses NUL and invalid UTF-8 in text: a parameter holding
// either fails the whole statement (and, for a batched write, every
// caller's write in it). The queue refuses such identifiers before they
// are stored (queue.CheckText) and makes free text storable
// (queue.StorableError); what is left is a key only looked up, which
// cannot match what was never stored.

// lookupToken returns token as the store looks it up: a token that is not
// storable text was never handed out, so it is looked up as "", which no
// lease holds, and the fenced write answers as for any stale token.
func lookupToken(token string) string {
	if !queue.Storable(token) {
		return ""
	}
	return token
}

// unstorable reports whether err is Postgres refusing a text parameter
// (invalid_byte_sequence: a NUL byte or invalid UTF-8;
// untranslatable_character).
func unstorable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "22021" || pe.Code == "22P05")
}

// errUnstorable is what a write whose text Postgres refused returns: an
// invalid argument, never a store fault, so no caller retries it.
func errUnstorable(op string, err error) error {
	return fmt.Errorf("pgqueue: %s: %w: text holds a NUL byte or invalid UTF-8, which Postgres cannot store (%v)",
		op, queue.ErrInvalidArgument, err)
}
