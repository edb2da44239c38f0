package bench

import (
	"os"
	"testing"

	"github.com/cohort-dev/cohort/internal/testkit"
)

// TestMain removes the binaries the benchmarks built once they have run.
func TestMain(m *testing.M) {
	code := m.Run()
	testkit.RemoveBuilds()
	os.Exit(code)
}
