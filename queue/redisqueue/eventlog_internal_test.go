package redisqueue

import "testing"

// TestTrimmedAfter covers the gap rule on the stream's oldest entry, its
// last id when emptied, and Redis 7's newest XDEL-deleted id.
func TestTrimmedAfter(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                            string
		after, maxDeleted, oldest, last string
		want                            bool
	}{
		{"cursor before the oldest kept", "100-0", "0-0", "200-0", "300-0", true},
		{"oldest kept right after the cursor", "100-0", "0-0", "100-1", "300-0", false},
		{"oldest kept in the next millisecond, first of it", "100-18446744073709551615", "", "101-0", "300-0", false},
		{"cursor at the oldest kept", "200-0", "0-0", "200-0", "300-0", false},
		{"cursor past the oldest kept", "250-3", "", "200-0", "300-0", false},
		{"emptied stream with entries past the cursor", "100-0", "0-0", "", "300-0", true},
		{"emptied stream read to its end", "300-0", "0-0", "", "300-0", false},
		{"an entry past the cursor deleted by XDEL", "250-0", "260-0", "200-0", "300-0", true},
		{"XDEL before the cursor only", "250-0", "240-0", "200-0", "300-0", false},
		{"cursor not an id", "x", "0-0", "200-0", "300-0", false},
	}
	for _, c := range cases {
		if got := trimmedAfter(c.after, c.maxDeleted, c.oldest, c.last); got != c.want {
			t.Errorf("%s: trimmedAfter(%q, %q, %q, %q) = %v, want %v", c.name, c.after, c.maxDeleted, c.oldest, c.last, got, c.want)
		}
	}
}
