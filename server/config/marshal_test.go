package config

import (
	"bytes"
	"testing"
)

// TestMarshalRoundTrip checks that Marshal writes a configuration that
// Parse reads back as the same one (written out again, it reads the same;
// empty lists and maps may come back empty instead of nil), so tooling can
// write one out and load it.
func TestMarshalRoundTrip(t *testing.T) {
	t.Parallel()
	docs := []string{"", "storage:\n  data_dir: /var/lib/sluice\nqueues:\n  backends: {scrape: embedded}\n  lease: 45s\n"}
	for _, doc := range docs {
		cfg, err := Parse([]byte(doc), "in.yaml")
		if err != nil {
			t.Fatalf("Parse(%q): %v", doc, err)
		}
		first, err := Marshal(cfg)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		again, err := Parse(first, "out.yaml")
		if err != nil {
			t.Fatalf("Parse(Marshal(%q)): %v\n%s", doc, err, first)
		}
		second, err := Marshal(again)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		if !bytes.Equal(first, second) {
			t.Errorf("Parse(Marshal(cfg)) differs from cfg for %q:\n%s\nthen\n%s", doc, first, second)
		}
		if again.Queues.Lease != cfg.Queues.Lease || len(again.Queues.Backends) != len(cfg.Queues.Backends) {
			t.Errorf("read back lease %v, backends %v; want %v, %v", again.Queues.Lease, again.Queues.Backends, cfg.Queues.Lease, cfg.Queues.Backends)
		}
	}
}
