package server

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"", ""},
		{strings.Repeat("a", 100), strings.Repeat("a", 100)},
		{strings.Repeat("a", 101), strings.Repeat("a", 100) + "…"},
		{strings.Repeat("é", 51), strings.Repeat("é", 50) + "…"},
		{"a" + strings.Repeat("é", 60), "a" + strings.Repeat("é", 49) + "…"}, // never half a character
	}
	for _, c := range cases {
		if got := clip(c.in); got != c.want || !utf8.ValidString(got) {
			t.Errorf("clip(%d bytes) = %q, want %q", len(c.in), got, c.want)
		}
	}
}
