// Package backendkit is a module outside Sluice's own that writes a queue
// backend (memqueue) and runs both conformance suites, queue/queuetest and
// ratelimit/limittest, the way a third party would: through Sluice's public
// packages only. Its go.mod replaces the Sluice module with this checkout.
//
//	cd examples/backendkit && go test ./...
package backendkit
