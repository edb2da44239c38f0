package testkit

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryHasTheTestsTags: the binary the end-to-end tests run is built
// with the invariants tag exactly when the test binary is, so that the
// suite's checks reach the real server too.
func TestBinaryHasTheTestsTags(t *testing.T) {
	t.Cleanup(RemoveBuilds)
	out, err := exec.Command("go", "version", "-m", Binary(t)).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	if tagged := strings.Contains(string(out), "-tags=invariants"); tagged != invariants {
		t.Fatalf("cmd/cohort built with the invariants tag: %t, the test binary: %t\n%s", tagged, invariants, out)
	}
}
