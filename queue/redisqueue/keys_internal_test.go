package redisqueue

import (
	"testing"

	"github.com/sluicehq/sluice/keyspace"
)

// TestSchedKeysAsJoined checks that the tenant and group keys an enqueue
// builds by concatenation are the keys keyspace.Join names, which the
// scripts' escape (lib.lua's esc, checked by TestLuaEscapeMatchesGo)
// derives for the same names.
func TestSchedKeysAsJoined(t *testing.T) {
	r, err := newKeyring(keyspace.DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"acme", "a b:c/{x}", "50%~7E", "é-队列", "\x00\xff", "t:x", "sched"} {
		if got, want := r.tenant(name), r.sched("t", name); got != want {
			t.Errorf("tenant(%q) = %q; Join gives %q", name, got, want)
		}
		if got, want := r.group(name), r.sched("g", name); got != want {
			t.Errorf("group(%q) = %q; Join gives %q", name, got, want)
		}
	}
}
