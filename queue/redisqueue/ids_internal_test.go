package redisqueue

import (
	"errors"
	"regexp"
	"testing"

	"github.com/sluicehq/sluice/queue"
)

var urlSafe = regexp.MustCompile(`^[A-Za-z0-9._~-]+$`)

// TestIDQueueForm checks that a queue's form in ids uses only URL-unreserved
// characters, that plain names are their own form, and that parseID reads
// every form back to its queue.
func TestIDQueueForm(t *testing.T) {
	cases := []struct{ queue, want string }{
		{"mail", "mail"},
		{"emails.send_v-2", "emails.send_v-2"},
		{"c:d", "c~3Ad"},
		{"a b", "a~20b"},
		{"a/b?c", "a~2Fb~3Fc"},
		{"{x}", "~7Bx~7D"},
		{"50%", "50~25"},
		{"a~b", "a~7Eb"},
		{"~7E", "~7E7E"},
		{"ü", "~C3~BC"},
		{"队列", "~E9~98~9F~E5~88~97"},
	}
	for _, c := range cases {
		if got := idQueue(c.queue); got != c.want {
			t.Errorf("idQueue(%q) = %q, want %q", c.queue, got, c.want)
		}
		id := "1893553445000000-" + idQueue(c.queue)
		if !urlSafe.MatchString(id) {
			t.Errorf("id %q has characters a URL path reserves", id)
		}
		seq, q, err := parseID(id)
		if err != nil || seq != "1893553445000000" || q != c.queue {
			t.Errorf("parseID(%q) = %q, %q, %v; want the sequence and %q", id, seq, q, err, c.queue)
		}
	}
}

// TestParseLegacyID checks that an id made before ids were URL-safe
// (keyspace.Escape's '%' form) still names its job, and that forms idQueue
// never makes name none.
func TestParseLegacyID(t *testing.T) {
	if _, q, err := parseID("1893553445000000-c%3Ad"); err != nil || q != "c:d" {
		t.Errorf("parseID of a legacy id = %q, %v; want c:d", q, err)
	}
	for _, id := range []string{
		"1893553445000000-c~3ad", // lower-case hex
		"1893553445000000-~61",   // an unreserved byte escaped
		"1893553445000000-a~2",   // truncated
		"1893553445000000-a~zz",
		"1893553445000000-a~+1",
		"1893553445000000-c:d",
	} {
		if _, _, err := parseID(id); !errors.Is(err, queue.ErrNotFound) {
			t.Errorf("parseID(%q) error = %v, want ErrNotFound", id, err)
		}
	}
}
