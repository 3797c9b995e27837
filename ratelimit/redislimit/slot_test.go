package redislimit

import "testing"

func TestKeySlot(t *testing.T) {
	t.Parallel()
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	tests := []struct {
		key  string
		want uint16
	}{
		{"123456789", 12739},
		{"foo", 12182},
		{"bar", 5061},
		{"{foo}", 12182},
		{"x{foo}y", 12182},
		{"{user1000}.following", keySlot("user1000")},
		{"foo{}{bar}", crc16("foo{}{bar}") % slotCount},
		{"foo{{bar}}zap", keySlot("{bar")},
		{"foo{bar}{zap}", keySlot("bar")},
	}
	for _, tc := range tests {
		if got := keySlot(tc.key); got != tc.want {
			t.Errorf("keySlot(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}
