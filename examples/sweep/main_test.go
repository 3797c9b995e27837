package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/flow"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	sweptLine = regexp.MustCompile(`swept (\d+) dates: (\d+) loaded, (\d+) failed \((\d+) blocked\), (\d+) skipped`)
	callsLine = regexp.MustCompile(`upstream calls for the sweep: (\d+)`)
	savedLine = regexp.MustCompile(`without the breaker: (\d+) calls; the breaker saved (\d+)`)
)

func ints(t *testing.T, re *regexp.Regexp, out string) []int {
	t.Helper()
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output has no line matching %s:\n%s", re, out)
	}
	var n []int
	for _, s := range m[1:] {
		v, _ := strconv.Atoi(s)
		n = append(n, v)
	}
	return n
}

func TestRunPrintsWhatTheBreakerSaved(t *testing.T) {
	for _, workers := range []int{1, flow.DefaultWorkers} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			var buf bytes.Buffer
			if err := run(context.Background(), &buf, workers); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			swept := ints(t, sweptLine, out)
			total, loaded, failed, blocked, skipped := swept[0], swept[1], swept[2], swept[3], swept[4]
			calls := ints(t, callsLine, out)[0]
			saved := ints(t, savedLine, out)
			if total != 60 || loaded != 0 || failed != blocked || failed+skipped != 60 {
				t.Errorf("swept %v: want 60 dates, none loaded, every failure blocked, the rest skipped", swept)
			}
			if attempted := failed; attempted < 5 || attempted >= 5+workers {
				t.Errorf("%d dates attempted with %d workers, want 5 to %d", attempted, workers, 5+workers-1)
			}
			if calls != failed*fetchesEach {
				t.Errorf("%d upstream calls for %d attempted dates, want %d: skipped dates must cost nothing", calls, failed, failed*fetchesEach)
			}
			if saved[0] != 180 || saved[1] != 180-calls || saved[1] != skipped*fetchesEach {
				t.Errorf("saved line %v with %d calls, %d skipped: want 180 and %d", saved, calls, skipped, 180-calls)
			}
			if workers == 1 && (failed != 5 || calls != 15 || saved[1] != 165) {
				t.Errorf("one worker: %d attempted, %d calls, %d saved; want exactly 5, 15, 165", failed, calls, saved[1])
			}
			if !strings.Contains(out, "lookup 2026-03-03: $103") || !strings.Contains(out, "likely a consent or block page") {
				t.Errorf("output misses the lookups or the sweep error:\n%s", out)
			}
		})
	}
}
