package testutil

import "testing"

func TestFull(t *testing.T) {
	for _, tc := range []struct {
		env  string
		full bool
	}{{"", false}, {"0", false}, {"no", false}, {"1", true}, {"true", true}} {
		t.Setenv(EnvFull, tc.env)
		if got := Full(); got != tc.full {
			t.Errorf("%s=%q: Full() = %v, want %v", EnvFull, tc.env, got, tc.full)
		}
		wantSize := 1
		if tc.full && !Race {
			wantSize = 2
		}
		if got := Size(1, 2); got != wantSize {
			t.Errorf("%s=%q, race %v: Size(1, 2) = %d, want %d", EnvFull, tc.env, Race, got, wantSize)
		}
		ran := false
		t.Run("NeedFull", func(t *testing.T) {
			NeedFull(t, "this test")
			ran = true
		})
		if ran != tc.full {
			t.Errorf("%s=%q: the test after NeedFull ran = %v, want %v", EnvFull, tc.env, ran, tc.full)
		}
	}
}
