package mux_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/queue/mux/internal/routertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The helpers of package routertest, by their short names here.
var (
	openSQLite = routertest.OpenSQLite
	newMux     = routertest.NewMux
	openLane   = routertest.OpenLane
)
