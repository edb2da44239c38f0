//go:build invariants

package coordinator_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// brokenChild names the case a child process of
// TestRuntimeStopsOnABrokenMachine runs.
const brokenChild = "COHORT_TEST_BROKEN_MACHINE"

// TestRuntimeStopsOnABrokenMachine (invariants build tag): the runtime
// runs its checks itself, and a broken invariant panics in the shard's
// loop, which stops the process, so that whatever test ran it fails. Each
// case runs a machine that breaks a rule in a child process of the test
// binary, which must die with a report naming the shard and what broke.
func TestRuntimeStopsOnABrokenMachine(t *testing.T) {
	if c := os.Getenv(brokenChild); c != "" {
		runBroken(t, c)
		return
	}
	for _, tc := range []struct {
		name string
		want []string
	}{
		// A handler changes a counter without a record: the replay
		// check at most eight events later.
		{"unrecorded", []string{"- live:    a=2", "+ rebuilt: a=1"}},
		// The machine's own Check fails after the event.
		{"check", []string{"counter b is broken"}},
		// The runtime closes at the third event, before the replay
		// check is due: the check at Close.
		{"close", []string{"- live:    b=2", "+ rebuilt: b=1", "(*Runtime).shutdown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestRuntimeStopsOnABrokenMachine$", "-test.count=1")
			// The child dies before its own cleanup: its temporary
			// directories go under one of ours.
			cmd.Env = append(os.Environ(), brokenChild+"="+tc.name, "TMPDIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the child lived on:\n%s", out)
			}
			for _, want := range append([]string{"panic: coordinator: invariant broken in shard 7"}, tc.want...) {
				if !strings.Contains(string(out), want) {
					t.Fatalf("the child's death does not say %q:\n%s", want, out)
				}
			}
		})
	}
}

// runBroken is the child's side: it runs case c, which must not return.
// The check panics before the broken event's reply can leave; a reply,
// or a close that returns and leaves the process alive, means the
// runtime missed it.
func runBroken(t *testing.T, c string) {
	e := newEnv(t)
	switch c {
	case "unrecorded":
		e.do("inc:a", 0)
		e.do("cheat:a", 0)
		for range 8 {
			e.do("get:a", 0)
		}
	case "check":
		e.wait(e.submit("break:b", 0))
	case "close":
		// Loaded, then two events: the replay check is due at the
		// eighth.
		e.do("inc:b", 0)
		e.do("cheat:b", 0)
		// The loop's panic in Close unwinds through the close of its
		// done channel, so Close may return before the process dies.
		e.set.Close()
		<-time.After(30 * time.Second)
	}
	t.Fatalf("case %s: the runtime did not stop", c)
}
