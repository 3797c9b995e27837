package queue

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStorableText(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"plain", "plain"},
		{"", ""},
		{"a\x00b", "a\uFFFDb"},
		{"a\xffb", "a\uFFFDb"},
		{"a\xed\xa0\x80b", "a\uFFFDb"}, // a surrogate in UTF-8 form: one run of invalid bytes
		{"tab\tand ünïcode 😀", "tab\tand ünïcode 😀"},
	}
	for _, c := range cases {
		if got := StorableText(c.in); got != c.want || !Storable(got) {
			t.Errorf("StorableText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// StorableError stays within MaxErrorLen once NULs have grown into
// three-byte replacement characters, and cuts on a character boundary.
func TestStorableErrorBound(t *testing.T) {
	t.Parallel()
	got := StorableError(strings.Repeat("\x00", MaxErrorLen))
	if len(got) > MaxErrorLen || !utf8.ValidString(got) || !Storable(got) {
		t.Errorf("len %d, valid %v; want at most %d bytes of storable text", len(got), utf8.ValidString(got), MaxErrorLen)
	}
}

func TestCheckText(t *testing.T) {
	t.Parallel()
	f := Field("JobSpec", "UniqueKey")
	for in, rule := range map[string]string{"a\x00": "must not contain NUL", "a\xff": "must be valid UTF-8"} {
		var ia *InvalidArgumentError
		if err := CheckText(f, in); !errors.As(err, &ia) || ia.Path != f || !strings.HasPrefix(ia.Rule, rule) {
			t.Errorf("CheckText(%q) = %v, want %s", in, err, rule)
		}
	}
	if err := CheckText(f, "fine ü"); err != nil {
		t.Errorf("CheckText(fine) = %v", err)
	}
}
