// Package keyspace builds every Redis key Sluice uses.
//
// A key has two forms. The logical key is what the code reasons about:
// a validated namespace followed by escaped segments, such as
// "rate-limit:ip:login:ip:192.0.2.1". The physical key is the logical key
// under a deployment prefix, such as "sluice:rate-limit:ip:login:ip:192.0.2.1".
//
// Segments are escaped so that only A-Z a-z 0-9 - _ . ~ stay literal; every
// other byte becomes %XX with upper-case hex. That removes ':', '{', '}' and
// the glob characters from user input, so no input can change the structure
// of a key, the pattern a SCAN matches, or the Redis Cluster slot it maps to.
package keyspace

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrInvalidKey is matched (with errors.Is) by every error this package returns.
var ErrInvalidKey = errors.New("keyspace: invalid key")

var namespacePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(:[A-Za-z0-9_-]+)*$`)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidKey}, args...)...)
}

const upperHex = "0123456789ABCDEF"

func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// Escape returns segment with every byte outside A-Z a-z 0-9 - _ . ~ written
// as %XX (upper-case hex of the UTF-8 byte). It matches JavaScript's
// encodeURIComponent with !'()* also escaped.
func Escape(segment string) string {
	n := 0
	for i := 0; i < len(segment); i++ {
		if !unreserved(segment[i]) {
			n++
		}
	}
	if n == 0 {
		return segment
	}
	var b strings.Builder
	b.Grow(len(segment) + 2*n)
	for i := 0; i < len(segment); i++ {
		c := segment[i]
		if unreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
	return b.String()
}

// Unescape reverses Escape. It rejects input that Escape could not have
// produced (a literal reserved byte, lower-case or malformed hex), so that
// every segment has exactly one escaped form.
func Unescape(escaped string) (string, error) {
	var b strings.Builder
	b.Grow(len(escaped))
	for i := 0; i < len(escaped); i++ {
		c := escaped[i]
		switch {
		case c == '%':
			if i+2 >= len(escaped) {
				return "", invalid("truncated escape at byte %d of %q", i, escaped)
			}
			hi, lo := unhex(escaped[i+1]), unhex(escaped[i+2])
			if hi < 0 || lo < 0 {
				return "", invalid("bad escape %q at byte %d", escaped[i:i+3], i)
			}
			v := byte(hi<<4 | lo)
			if unreserved(v) {
				return "", invalid("byte %q must not be escaped", v)
			}
			b.WriteByte(v)
			i += 2
		case unreserved(c):
			b.WriteByte(c)
		default:
			return "", invalid("byte %q must be escaped", c)
		}
	}
	return b.String(), nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// ValidNamespace reports whether ns matches ^[A-Za-z0-9_-]+(:[A-Za-z0-9_-]+)*$.
// It is a hand-written scan rather than the regexp because every key built
// on a hot path checks its namespace.
func ValidNamespace(ns string) bool {
	if ns == "" || ns[0] == ':' || ns[len(ns)-1] == ':' {
		return false
	}
	for i := 0; i < len(ns); i++ {
		c := ns[i]
		switch {
		case c == ':':
			if ns[i-1] == ':' {
				return false
			}
		case c == '.' || c == '~' || !unreserved(c):
			return false
		}
	}
	return true
}

// Join builds a logical key: the namespace, then each segment escaped,
// separated by ':'. The namespace must match
// ^[A-Za-z0-9_-]+(:[A-Za-z0-9_-]+)*$ and no segment may be empty.
func Join(namespace string, segments ...string) (string, error) {
	return JoinTagged(namespace, 0, 0, segments...)
}

// JoinTagged is Join with segments[tagStart:tagEnd] wrapped in one Redis hash
// tag, "{...}", so that every key sharing those segments maps to the same
// Redis Cluster slot. Because escaped segments never contain braces, the tag
// added here is the only one in the key. tagStart == tagEnd adds no tag.
func JoinTagged(namespace string, tagStart, tagEnd int, segments ...string) (string, error) {
	if !ValidNamespace(namespace) {
		return "", invalid("namespace %q must match %s", namespace, namespacePattern)
	}
	if tagStart < 0 || tagEnd < tagStart || tagEnd > len(segments) {
		return "", invalid("hash tag range [%d:%d] outside %d segments", tagStart, tagEnd, len(segments))
	}
	var b strings.Builder
	b.Grow(len(namespace) + 16*len(segments))
	b.WriteString(namespace)
	for i, s := range segments {
		if s == "" {
			return "", invalid("segment %d is empty", i)
		}
		b.WriteByte(':')
		if i == tagStart && tagStart < tagEnd {
			b.WriteByte('{')
		}
		b.WriteString(Escape(s))
		if i == tagEnd-1 && tagStart < tagEnd {
			b.WriteByte('}')
		}
	}
	return b.String(), nil
}

// Split reverses Join for a key built with the given namespace: it returns
// the unescaped segments. Hash-tag braces are removed.
func Split(namespace, key string) ([]string, error) {
	if !ValidNamespace(namespace) {
		return nil, invalid("namespace %q must match %s", namespace, namespacePattern)
	}
	rest, ok := strings.CutPrefix(key, namespace+":")
	if !ok {
		return nil, invalid("key %q is not under namespace %q", key, namespace)
	}
	rest = strings.NewReplacer("{", "", "}", "").Replace(rest)
	parts := strings.Split(rest, ":")
	for i, p := range parts {
		s, err := Unescape(p)
		if err != nil {
			return nil, err
		}
		if s == "" {
			return nil, invalid("segment %d of %q is empty", i, key)
		}
		parts[i] = s
	}
	return parts, nil
}
