package main

import (
	"bytes"
	"flag"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string // expected in stdout+stderr
	}{
		{nil, 2, "Usage:"},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"--help"}, 0, "Commands:"},
		{[]string{"version"}, 0, "cohort "},
		{[]string{"serve", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"serve", "--help"}, 0, "Usage: cohort serve"},
		{[]string{"serve", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"serve", "--log-level", "loud"}, 2, "invalid --log-level"},
		{[]string{"serve", "--trace-sample-ratio", "1.5"}, 2, "--trace-sample-ratio must be between 0 and 1"},
		{[]string{"serve", "--trace-sample-ratio", "-0.1"}, 2, "--trace-sample-ratio must be between 0 and 1"},
		{[]string{"serve", "--default-partitions", "0"}, 2, "--default-partitions must be"},
		{[]string{"serve", "--shutdown-timeout", "3"}, 2, `invalid value "3" for flag -shutdown-timeout: a duration needs a unit, such as 5s or 500ms`},
		{[]string{"serve", "--shutdown-timeout", "soon"}, 2, `invalid value "soon" for flag -shutdown-timeout: not a duration: a number and a unit, such as 5s or 500ms`},
		{[]string{"groups", "list", "--timeout", "10"}, 2, `invalid value "10" for flag -timeout: a duration needs a unit`},
		{[]string{"serve", "--max-connections", "0"}, 2, "--max-connections must be at least 1"},
		{[]string{"serve", "--max-connections-per-ip", "-1"}, 2, "--max-connections-per-ip must not be negative"},
		{[]string{"serve", "--max-request-bytes", "2000000", "--queued-max-request-bytes", "1000000"}, 2, "--queued-max-request-bytes (1000000) must be at least --max-request-bytes (2000000)"},
		{[]string{"serve", "--request-read-timeout", "-1s"}, 2, "must not be negative"},
		{[]string{"serve", "--super-users", "User:a;bob"}, 2, "--super-users: principal \"bob\" is not of the form Type:name"},
		{[]string{"serve", "--grpc-max-concurrent-streams", "0"}, 2, "--grpc-max-concurrent-streams must be between 1"},
		{[]string{"serve", "--group-max-pending-members", "-1"}, 2, "group max pending members -1: must be at least 1"},
		{[]string{"serve", "--group-share-heartbeat-interval", "50s"}, 2, "share heartbeat interval (50s) must be positive and below the share session timeout (45s)"},
		{[]string{"serve", "--group-share-max-size", "-1"}, 2, "share group max size -1: must be at least 1"},
		{[]string{"serve", "--group-share-delivery-count-limit", "11"}, 2, "--group-share-delivery-count-limit must be between 2 and 10, not 11"},
		{[]string{"serve", "--group-share-record-lock-duration", "500ms"}, 2, "--group-share-record-lock-duration must be between 1s and 1h"},
		{[]string{"serve", "--group-share-partition-max-record-locks", "99"}, 2, "--group-share-partition-max-record-locks must be between 100 and 10000"},
		{[]string{"serve", "--group-share-max-share-sessions", "100"}, 2, "--group-share-max-share-sessions (100) must be at least --group-share-max-size (200)"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code != tc.code || !strings.Contains(out, tc.out) {
			t.Errorf("cohort %v: exit %d, want %d; output does not contain %q:\n%s", tc.args, code, tc.code, tc.out, out)
		}
	}
}

// TestUsageNotesFollowTheirCommand: a continuation line of the command
// list belongs to the command above it; orgs, not quotas, goes through a
// node's admin HTTP API (quotas uses Kafka's client-quota APIs).
func TestUsageNotesFollowTheirCommand(t *testing.T) {
	lines := strings.Split(usage, "\n")
	for i, l := range lines {
		if strings.Contains(l, "(over a node's admin HTTP API)") {
			if i == 0 || !strings.HasPrefix(lines[i-1], "  orgs ") {
				t.Errorf("the admin HTTP API note follows %q, want the orgs line", lines[max(i-1, 0)])
			}
			return
		}
	}
	t.Error("the usage does not say orgs works over a node's admin HTTP API")
}

// TestBadCommandLineIsShort: a bad flag or argument prints the error and
// where to find the flags, not the whole usage that would scroll it away;
// --help still prints the usage, with durations named as such.
func TestBadCommandLineIsShort(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
	}{
		{"cohort serve", []string{"serve", "--bogus"}},
		{"cohort serve", []string{"serve", "--shutdown-timeout", "5"}},
		{"cohort serve", []string{"serve", "extra"}},
		{"cohort groups describe", []string{"groups", "describe", "--bogus", "g"}},
		{"cohort bench commits", []string{"bench", "commits", "--timeout", "1"}},
	} {
		args, cmd := tc.args, tc.cmd
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if code != 2 || stdout.Len() != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], cmd+": ") || lines[1] != "Run '"+cmd+" --help' for the flags." {
			t.Errorf("cohort %v: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and two lines: the error and the hint", args, code, stdout.String(), stderr.String())
		}
	}
	t.Setenv("COHORT_SHUTDOWN_TIMEOUT", "5")
	var stderr bytes.Buffer
	if code := run([]string{"serve"}, &bytes.Buffer{}, &stderr); code != 2 || stderr.String() != "cohort serve: invalid value \"5\" for COHORT_SHUTDOWN_TIMEOUT: a duration needs a unit, such as 5s or 500ms\nRun 'cohort serve --help' for the flags.\n" {
		t.Errorf("bad duration in the environment: exit %d, stderr:\n%s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"serve", "-h"}, &bytes.Buffer{}, &stderr); code != 0 || !strings.Contains(stderr.String(), "Flags:") || !strings.Contains(stderr.String(), "  -shutdown-timeout duration\n") {
		t.Errorf("serve -h: exit %d, want 0 and the usage naming durations:\n%s", code, stderr.String())
	}
}

// TestServeHelpDescribesEveryFlag guards the README's promise that
// --help describes every flag, with its environment variable.
func TestServeHelpDescribesEveryFlag(t *testing.T) {
	var stderr bytes.Buffer
	run([]string{"serve", "--help"}, &bytes.Buffer{}, &stderr)
	for _, name := range []string{"kafka-listen", "advertised-kafka-addr", "data-dir", "auto-create-topics",
		"default-partitions", "max-request-bytes", "log-level", "shutdown-timeout",
		"max-connections", "max-connections-per-ip", "connections-max-idle", "queued-max-request-bytes",
		"request-read-timeout", "response-write-timeout", "grpc-max-concurrent-streams", "group-max-pending-members",
		"group-share-session-timeout", "group-share-heartbeat-interval", "group-share-max-size", "group-share-delivery-count-limit",
		"group-share-record-lock-duration", "group-share-partition-max-record-locks", "group-share-max-share-sessions",
		"otlp-endpoint", "trace-sample-ratio"} {
		if !strings.Contains(stderr.String(), "-"+name+" ") && !strings.Contains(stderr.String(), "-"+name+"\n") {
			t.Errorf("serve --help does not describe --%s", name)
		}
	}
	if !strings.Contains(stderr.String(), "COHORT_<FLAG_IN_CAPS>") {
		t.Error("serve --help does not explain the environment variables")
	}
}

func TestFlagsWinOverEnvironment(t *testing.T) {
	newFS := func() (*flag.FlagSet, *string, *time.Duration) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(&bytes.Buffer{})
		listen := fs.String("kafka-listen", "default", "")
		d := fs.Duration("shutdown-timeout", time.Second, "")
		return fs, listen, d
	}
	t.Setenv("COHORT_KAFKA_LISTEN", "from-env")
	t.Setenv("COHORT_SHUTDOWN_TIMEOUT", "250ms")

	fs, listen, d := newFS()
	if _, ok := parseFlags(fs, nil); !ok || *listen != "from-env" || *d != 250*time.Millisecond {
		t.Errorf("env not applied: listen=%q timeout=%v", *listen, *d)
	}
	fs, listen, _ = newFS()
	if _, ok := parseFlags(fs, []string{"--kafka-listen", "from-flag"}); !ok || *listen != "from-flag" {
		t.Errorf("flag did not win over env: listen=%q", *listen)
	}
	t.Setenv("COHORT_SHUTDOWN_TIMEOUT", "soon")
	fs, _, _ = newFS()
	if code, ok := parseFlags(fs, nil); ok || code != 2 {
		t.Errorf("bad env value: ok=%v code=%d, want exit 2", ok, code)
	}
}

func TestEnvName(t *testing.T) {
	if got := envName("advertised-kafka-addr"); got != "COHORT_ADVERTISED_KAFKA_ADDR" {
		t.Errorf("envName = %q", got)
	}
}

// TestServeProcs: `cohort serve` runs with two Ps more than Go's default
// (syncs to disk hold theirs), and GOMAXPROCS set by the user wins.
func TestServeProcs(t *testing.T) {
	for _, c := range []struct {
		env         string
		procs, want int
	}{
		{"", 2, 4},
		{"", 1, 3},
		{"", 16, 18},
		{"2", 2, 2},
		{"1", 1, 1},
	} {
		if got := serveProcs(c.env, c.procs); got != c.want {
			t.Errorf("serveProcs(%q, %d) = %d, want %d", c.env, c.procs, got, c.want)
		}
	}
}

// TestGCPercentFor: the next cycle's goal (Go's: live + (live + roots) ×
// GOGC/100) is the floor while the live heap is well under it, and Go's
// default above.
func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, roots, floor uint64
		want               int
	}{
		{5 * mib, 0, 64 * mib, 1180},
		{5 * mib, 3 * mib, 64 * mib, 737},
		{16 * mib, 0, 64 * mib, 300},
		{32 * mib, 0, 64 * mib, 100},
		{30 * mib, 4 * mib, 64 * mib, 100},
		{1024 * mib, 0, 64 * mib, 100},
		{0, 0, 64 * mib, 100}, // before the first cycle
		{1, 0, 64 * mib, maxGCPercent},
	} {
		got := gcPercentFor(c.live, c.roots, c.floor)
		if got != c.want {
			t.Errorf("gcPercentFor(%d, %d, %d) = %d, want %d", c.live, c.roots, c.floor, got, c.want)
		}
		goal := c.live + (c.live+c.roots)*uint64(got)/100
		if c.live > 0 && got < maxGCPercent && goal+c.live/100+1 < max(c.floor, 2*c.live+c.roots) {
			t.Errorf("live %d: goal %d under the floor", c.live, goal)
		}
	}
}

// TestKeepHeapFloor: after a collection the tuner has set GOGC so that the
// runtime's next goal is the floor (this test's heap is far under it), and
// stopping it gives Go its default back.
func TestKeepHeapFloor(t *testing.T) {
	const floor = 256 << 20
	stop := keepHeapFloor(floor)
	defer stop()
	sample := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/goal:bytes"}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		metrics.Read(sample)
		gogc, goal := sample[0].Value.Uint64(), sample[1].Value.Uint64()
		if gogc > 100 && goal >= floor-floor/32 && goal <= floor+floor/32 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("GOGC %d and a heap goal of %d bytes after a collection, want a goal of about %d", gogc, goal, floor)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	runtime.GC()
	runtime.GC()
	metrics.Read(sample)
	if got := sample[0].Value.Uint64(); got != 100 {
		t.Errorf("GOGC %d after stop, want 100", got)
	}
	if wantHeapFloor("200", "") || wantHeapFloor("", "1GiB") || !wantHeapFloor("", "") {
		t.Errorf("wantHeapFloor: the user's GOGC or GOMEMLIMIT must win")
	}
}
