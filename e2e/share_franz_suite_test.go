package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
)

// franzShareTests are franz-go's share group tests (KIP-932, pkg/kgo):
// its share consumer (kgo.ShareGroup) against a broker, which they skip
// unless ApiVersions offers ShareFetch and ShareAcknowledge at v2.
//   - TestShareGroup: 200 records on one partition, every one consumed.
//   - TestShareGroupAckOnClose: acknowledgements sent as a consumer
//     closes are kept; what it held and did not acknowledge goes to the
//     next one.
//   - TestShareGroupETL: chains of share groups over 3- and 1-partition
//     topics (500,000 records by default) with accepts, releases,
//     rejections, consumers killed and added mid-run, and checks that
//     every record arrives, rejected ones never downstream, and the
//     delivery counts.
//   - TestShareGroupOffsetsAdmin: DescribeShareGroupOffsets,
//     AlterShareGroupOffsets and DeleteShareGroupOffsets through kadm.
//   - TestConsumeRegexShareSkipsInternal: a share consumer's regex does
//     not take internal topics.
var franzShareTests = []string{"TestShareGroup", "TestShareGroupAckOnClose", "TestShareGroupETL", "TestShareGroupOffsetsAdmin", "TestConsumeRegexShareSkipsInternal"}

// TestFranzSuiteShareGroups runs franz-go's share group tests against
// `cohort serve`, as TestFranzSuiteTxnEtl runs its transaction test, and
// fails if any of them skips (a broker they think lacks share groups).
func TestFranzSuiteShareGroups(t *testing.T) {
	longTest(t)
	proc := testkit.StartBinary(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := "^(" + regexp.QuoteMeta(franzShareTests[0])
	for _, name := range franzShareTests[1:] {
		run += "|" + regexp.QuoteMeta(name)
	}
	run += ")$"
	cmd := exec.CommandContext(ctx, "go", "test", "github.com/twmb/franz-go/pkg/kgo", "-run", run, "-count=1", "-v")
	cmd.Dir = testkit.ModuleRoot()
	cmd.Env = append(os.Environ(), "KGO_SEEDS="+proc.Addr, "KGO_TEST_RF=1", "KGO_TEST_RECORDS=100000")
	out, err := cmd.CombinedOutput()
	// The client's own log lines ("[12:00:00.000 1][INFO] ...") would
	// hide the tests' verdicts.
	var kept []byte
	for _, line := range bytes.SplitAfter(out, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")) {
			kept = append(kept, line...)
		}
	}
	tail := kept
	if len(tail) > 20000 {
		tail = tail[len(tail)-20000:]
	}
	if err != nil {
		t.Fatalf("franz-go's share group tests against cohort serve: %v\n%s", err, tail)
	}
	for _, name := range franzShareTests {
		if !regexp.MustCompile(`(?m)^--- PASS: ` + regexp.QuoteMeta(name) + ` `).Match(out) {
			t.Errorf("franz-go's %s did not pass (skipped?)", name)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", tail)
	}
}
