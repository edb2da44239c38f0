package e2e

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
)

// TestFranzSuiteTxnEtl runs franz-go's own TestTxnEtl (pkg/kgo's
// consume-transform-produce test: a transactional producer, then chains
// of GroupTransactSession consumers, for every balancer, classic and
// KIP-848, static and not, checking that every record arrives exactly
// once) against `cohort serve`, as its broker-facing tests run: KGO_SEEDS
// names the broker. What it needs of the environment: KGO_TEST_RF=1 (the
// suite creates topics with replication factor 3 by default, and Cohort
// has one replica), and the go tool (it builds the suite from the module
// cache, the version in go.mod). KGO_TEST_RECORDS lowers the suite's
// 500,000 records to 50,000 to keep the test under a minute; it passes
// with the default too (about 30 s here).
func TestFranzSuiteTxnEtl(t *testing.T) {
	longTest(t)
	proc := testkit.StartBinary(t, t.TempDir(), "--group-initial-rebalance-delay", "0s")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "github.com/twmb/franz-go/pkg/kgo", "-run", "^TestTxnEtl$", "-count=1")
	cmd.Dir = testkit.ModuleRoot()
	cmd.Env = append(os.Environ(), "KGO_SEEDS="+proc.Addr, "KGO_TEST_RF=1", "KGO_TEST_RECORDS=50000")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if len(out) > 20000 {
			out = out[len(out)-20000:]
		}
		t.Fatalf("franz-go TestTxnEtl against cohort serve: %v\n%s", err, out)
	}
}
