package pebble_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/pebble"
)

// crashDirEnv tells a re-executed test binary to act as TestCrash's child and
// write to the store in this directory.
const crashDirEnv = "COHORT_PEBBLE_CRASH_DIR"

const (
	crashWriters    = 16
	crashOpsPerBat  = 3    // keys per batch, to check batches land whole
	crashWantAcks   = 4000 // acknowledged batches to see before the kill
	crashMaxRuntime = 2 * time.Minute
)

func crashKey(w, i, j int) []byte { return fmt.Appendf(nil, "b/%02d/%08d/%d", w, i, j) }

// crashValue is ~100 bytes and differs per batch, so a stale or torn value
// is caught, not just a missing one.
func crashValue(w, i int) []byte {
	return bytes.Repeat(fmt.Appendf(nil, "%02d:%08d;", w, i), 9)
}

// TestCrashChild is not a test: it is the process TestCrash runs and kills.
// It writes batches from crashWriters goroutines until killed, printing
// "ack W I" only after Apply of writer W's batch I returned.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("helper process for TestCrash")
	}
	s, err := pebble.Open(dir, pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Runs until SIGKILL. If the parent dies instead, the next write to the
	// closed stdout pipe raises SIGPIPE and ends this process too.
	var wg sync.WaitGroup
	for w := range crashWriters {
		wg.Go(func() {
			for i := 0; ; i++ {
				var b store.Batch
				for j := range crashOpsPerBat {
					b.Put(crashKey(w, i, j), crashValue(w, i))
				}
				if err := s.Apply(&b); err != nil {
					fmt.Fprintln(os.Stderr, "Apply:", err)
					os.Exit(2)
				}
				// One write(2) per line; *os.File serialises concurrent writes.
				fmt.Fprintf(os.Stdout, "ack %d %d\n", w, i)
			}
		})
	}
	wg.Wait()
}

// TestCrash kills a writing process with SIGKILL and checks that every batch
// it acknowledged survives, whole. SIGKILL keeps the OS page cache, so this
// catches writes acknowledged while still buffered inside the process (as
// Pebble's NoSync commits are), not a missing fsync; that is what
// TestApplySyncsBeforeReturning's simulated power loss is for.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a writer process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	var stderr bytes.Buffer // read only after Wait
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() { // on early failure, do not leak a writing process
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	// Bounded wait: if the child stalls, killing it makes the read below
	// return EOF, and the test fails on too few acks.
	timeout := time.AfterFunc(crashMaxRuntime, func() { cmd.Process.Kill() })
	defer timeout.Stop()

	acked := make([]int, crashWriters) // highest acknowledged batch per writer
	for w := range acked {
		acked[w] = -1
	}
	n := 0
	lines := bufio.NewScanner(stdout)
	readAck := func() bool {
		for lines.Scan() {
			var w, i int
			if _, err := fmt.Sscanf(lines.Text(), "ack %d %d", &w, &i); err != nil {
				continue // not an ack (test framework output)
			}
			if w < 0 || w >= crashWriters || i != acked[w]+1 {
				t.Fatalf("malformed or out-of-order ack %q (last for writer: %d)", lines.Text(), acked[w])
			}
			acked[w] = i
			n++
			return true
		}
		return false
	}
	for n < crashWantAcks && readAck() {
	}
	if n < crashWantAcks {
		cmd.Wait()
		waited = true
		t.Fatalf("child produced %d acks, want %d; stderr:\n%s", n, crashWantAcks, stderr.String())
	}

	// While the child holds the store, another process must not open it.
	if s, err := pebble.Open(dir, pebble.Options{}); !errors.Is(err, pebble.ErrLocked) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open while another process has the store = %v, want ErrLocked", err)
	}

	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred cleanup, no Close
		t.Fatal(err)
	}
	for readAck() { // acks already in the pipe were acknowledged before the kill
	}
	werr := cmd.Wait()
	waited = true
	var exit *exec.ExitError
	if !errors.As(werr, &exit) || exit.Success() {
		t.Fatalf("child exited with %v, want killed; stderr:\n%s", werr, stderr.String())
	}
	t.Logf("child acknowledged %d batches before SIGKILL", n)

	s := mustOpen(t, dir, pebble.Options{})
	// Group what survived by batch.
	present := make([]map[int]int, crashWriters) // writer -> batch -> keys found
	for w := range present {
		present[w] = map[int]int{}
	}
	err = s.Scan([]byte("b/"), func(k, v []byte) error {
		var w, i, j int
		if _, err := fmt.Sscanf(string(k), "b/%02d/%08d/%d", &w, &i, &j); err != nil {
			return fmt.Errorf("unexpected key %q", k)
		}
		if !bytes.Equal(v, crashValue(w, i)) {
			return fmt.Errorf("key %q has value %q, want %q", k, v, crashValue(w, i))
		}
		present[w][i]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for w := range crashWriters {
		// Each writer waits for batch i before starting i+1, so what survived
		// must be batches 0..k with k >= the last ack (durability) and
		// k <= last ack + 1 (one batch may have committed unacknowledged).
		k := len(present[w]) - 1
		if k < acked[w] {
			t.Errorf("writer %d: %d batches survived, but %d were acknowledged", w, k+1, acked[w]+1)
		}
		if k > acked[w]+1 {
			t.Errorf("writer %d: %d batches survived, but only %d were acknowledged", w, k+1, acked[w]+1)
		}
		for i := 0; i <= k; i++ {
			if got := present[w][i]; got != crashOpsPerBat {
				t.Errorf("writer %d batch %d: %d of %d keys survived (torn batch or gap)", w, i, got, crashOpsPerBat)
			}
		}
	}
}
