package queue

import (
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// Every store keeps text the same way, and not every store can keep every
// byte: Postgres refuses NUL and invalid UTF-8 in text. So text is held to
// one rule, here, before it reaches any store:
//
//   - free text a worker writes (an attempt's error) is made storable:
//     StorableError replaces each NUL and each run of bytes that are not
//     UTF-8 with U+FFFD, the replacement character, so the failure is recorded on
//     every store, the same everywhere, and the attempt ends as it should;
//   - identifiers (queue, kind, tenant and group names, unique keys, worker
//     ids) are refused with an *InvalidArgumentError when they hold NUL or
//     invalid UTF-8 (CheckText): a name changed on the way in would no
//     longer be the name its caller uses.

// ReplacementChar is what StorableText puts in place of a NUL byte or a
// run of bytes that are not UTF-8.
const ReplacementChar = "\uFFFD"

// StorableText returns s with each NUL byte, and each run of bytes that
// are not UTF-8, replaced by U+FFFD: text every store keeps as it is.
// Valid text without NUL is returned unchanged.
func StorableText(s string) string {
	if Storable(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, ReplacementChar), "\x00", ReplacementChar)
}

// StorableError is an attempt's error message as every store records it:
// made storable (StorableText), then cut to MaxErrorLen bytes on a
// character boundary. Backend.Fail records Failure.Error through it, so a
// worker's error is stored, and read back, the same on every store.
func StorableError(s string) string {
	return queuetype.Truncate(StorableText(s), MaxErrorLen)
}

// Storable reports whether s is valid UTF-8 without NUL: text every store
// can hold, compare and look up as it is.
func Storable(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}
