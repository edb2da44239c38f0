package e2e

import "testing"

// longTest marks one of the package's longest tests, which spend most of
// their time waiting (on clients, timeouts, restarts) rather than
// computing, to run beside another such test once the others are done:
// the suite's second slot has finished every other package by then, so
// the two share the machine's two cores, and the whole suite stays
// within ten minutes (go test runs -parallel GOMAXPROCS tests at once).
// A test that changes the process's environment (t.Setenv) cannot be
// one.
func longTest(t *testing.T) { t.Parallel() }
