package main

import (
	"encoding/json"
	"testing"
)

func TestHookFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		h       hookFlags
		want    string // the spec's JSON; empty when an error is wanted
		wantErr bool
	}{
		{"none", hookFlags{}, `{}`, false},
		{"url", hookFlags{url: "https://h.example/x"}, `{"webhook":{"url":"https://h.example/x"}}`, false},
		{"all", hookFlags{url: "https://h.example/x", metadata: `{"a":1}`, events: []string{"job.failed"}},
			`{"webhook":{"events":["job.failed"],"metadata":{"a":1},"url":"https://h.example/x"}}`, false},
		{"bad metadata", hookFlags{url: "https://h.example/x", metadata: "{"}, "", true},
		{"metadata alone", hookFlags{metadata: "1"}, "", true},
	}
	for _, c := range cases {
		s := map[string]any{}
		err := c.h.add(s)
		if (err != nil) != c.wantErr {
			t.Fatalf("%s: add = %v, want error %v", c.name, err, c.wantErr)
		}
		if err != nil {
			continue
		}
		got, _ := json.Marshal(s)
		if string(got) != c.want {
			t.Errorf("%s: spec %s, want %s", c.name, got, c.want)
		}
	}
}
