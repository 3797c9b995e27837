package queuetype

import (
	"strings"
	"unicode/utf8"
)

// CheckText returns an *InvalidArgumentError naming field when v holds a
// NUL byte or invalid UTF-8, which an identifier must not: not every
// store can hold them.
func CheckText(field FieldPath, v string) error {
	switch {
	case !utf8.ValidString(v):
		return InvalidArgument(field, "must be valid UTF-8, got %q", clipText(v))
	case strings.IndexByte(v, 0) >= 0:
		return InvalidArgument(field, "must not contain NUL (\\u0000), got %q", clipText(v))
	}
	return nil
}

// clipText cuts v for an error message: at most 100 bytes, on a
// character boundary.
func clipText(v string) string {
	if len(v) <= 100 {
		return v
	}
	return Truncate(v, 100) + "…"
}

// Truncate cuts s to at most n bytes, on a rune boundary.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}
