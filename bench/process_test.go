package bench

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
)

// processTargets run each broker in its own process, as users run them:
// `cohort serve` (the real binary, with its own GOMAXPROCS) and kfake
// (bench/kfakeserve, in memory). In process (targets), the broker shares
// the benchmark's Go scheduler and heap with the clients: handing a
// request from a client goroutine to a broker goroutine is cheaper than a
// hop between processes, and the broker competes with the clients for the
// same Ps. BENCHMARKS.md reports both where they differ.
var processTargets = []target{
	{"cohort-process", func(b *testing.B) string {
		return testkit.StartBinary(b, b.TempDir(), "--grpc-listen", "-", "--http-listen", "-").Addr
	}},
	{"kfake-process", startKfakeProcess},
}

// tmpfsTarget is cohort-process with its data directory on the tmpfs at
// /dev/shm: the same binary and code path, but an fsync there costs next
// to nothing (and a power loss loses everything, so it is not a durable
// result). Side by side with cohort-process it shows how much of a
// benchmark's time is the disk's and how much the code's. Benchmarks that
// add it say so; without a tmpfs at /dev/shm it is skipped.
var tmpfsTarget = target{"cohort-process-tmpfs", func(b *testing.B) string {
	var fs syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &fs); err != nil || fs.Type != tmpfsMagic {
		b.Skip("no tmpfs at /dev/shm")
	}
	dir, err := os.MkdirTemp("/dev/shm", "cohort-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return testkit.StartBinary(b, dir, "--grpc-listen", "-", "--http-listen", "-").Addr
}}

// tmpfsMagic is the f_type statfs reports for a tmpfs (linux/magic.h).
const tmpfsMagic = 0x01021994

// startKfakeProcess builds bench/kfakeserve once, runs it, and returns the
// address it logs; the process is killed when b ends.
func startKfakeProcess(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(testkit.Build(b, "./bench/kfakeserve"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start kfakeserve: %v", err)
	}
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, a, ok := strings.Cut(sc.Text(), "listening addr="); ok {
				addr <- strings.TrimSpace(a)
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		b.Fatal("kfakeserve did not log its address within 30s")
		return ""
	}
}
