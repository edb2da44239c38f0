package e2e

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/pebble"
)

// TestStartupFailures runs the real binary into every start-up failure a
// user meets on day one. Each must print one line that names the cause
// and exit non-zero (2 for bad flags, 1 otherwise), with no panic and no
// goroutine dump, and leave nothing behind: where the directory is not
// itself the problem, a server starts on it right after.
func TestStartupFailures(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().String()

	for _, tc := range []struct {
		what string
		// prepare makes the failure in dir and returns extra flags.
		prepare func(t *testing.T, dir string) []string
		code    int
		line    []string // the one line must contain these
		reuse   bool     // a server can start on dir afterwards
		asUser  bool     // run as an unprivileged user if the test is root
	}{
		{
			what:    "kafka port in use",
			prepare: func(*testing.T, string) []string { return []string{"--kafka-listen", port} },
			code:    1, reuse: true,
			line: []string{`msg="cohort could not start" err="kafka listener PLAINTEXT (` + port + `): listen tcp ` + port + `: bind: address already in use"`},
		},
		{
			what:    "grpc port in use",
			prepare: func(*testing.T, string) []string { return []string{"--grpc-listen", port} },
			code:    1, reuse: true,
			line: []string{`msg="cohort could not start" err="grpc listener: listen tcp ` + port + `: bind: address already in use"`},
		},
		{
			what:    "http port in use",
			prepare: func(*testing.T, string) []string { return []string{"--http-listen", port} },
			code:    1, reuse: true,
			line: []string{`msg="cohort could not start" err="http listener: listen tcp ` + port + `: bind: address already in use"`},
		},
		{
			what: "data dir locked by another process",
			prepare: func(t *testing.T, dir string) []string {
				testkit.StartBinary(t, dir) // killed when the test ends
				return nil
			},
			code: 1,
			line: []string{`msg="cohort could not start" err="data directory is in use by another cohort process: `},
		},
		{
			what: "data dir is a file",
			prepare: func(t *testing.T, dir string) []string {
				f := filepath.Join(dir, "file")
				if err := os.WriteFile(f, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				return []string{"--data-dir", filepath.Join(f, "data")}
			},
			code: 1,
			line: []string{`msg="cohort could not start" err="create data dir: mkdir `, `/file: not a directory"`},
		},
		{
			what: "data dir not writable",
			prepare: func(t *testing.T, dir string) []string {
				// A directory the unprivileged user can reach but not
				// write (t.TempDir's parents are private to root).
				data := filepath.Join(worldReadableDir(t), "data")
				if err := os.Mkdir(data, 0o555); err != nil {
					t.Fatal(err)
				}
				return []string{"--data-dir", data}
			},
			code: 1, asUser: true,
			line: []string{`msg="cohort could not start" err="lock data dir: open `, `/data/LOCK: permission denied"`},
		},
		{
			what: "garbage in the store's OPTIONS file",
			prepare: func(t *testing.T, dir string) []string {
				startStop(t, dir)
				garble(t, filepath.Join(dir, "store", "OPTIONS-*"))
				return nil
			},
			code: 1,
			line: []string{`msg="cohort could not start" err="open store: pebble store: open `},
		},
		{
			what: "garbage in a store table",
			prepare: func(t *testing.T, dir string) []string {
				// The second open folds the first one's journal into
				// Pebble, the third flushes Pebble's log to a table.
				startStop(t, dir)
				startStop(t, dir)
				startStop(t, dir)
				garble(t, filepath.Join(dir, "store", "*.sst"))
				return nil
			},
			code: 1,
			line: []string{`msg="cohort could not start" err="global unit: upgrade: pebble store: scan `, `pebble: backing file `},
		},
		{
			what: "corrupt coordinator record",
			prepare: func(t *testing.T, dir string) []string {
				startStop(t, dir)
				st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{})
				if err != nil {
					t.Fatal(err)
				}
				var b store.Batch
				b.Put(record.GroupKey{Shard: 3, Group: "g"}.Key(), []byte{99, 0, 1})
				if err := st.Apply(&b); err != nil {
					t.Fatal(err)
				}
				st.Close()
				return nil
			},
			code: 1,
			line: []string{`msg="cohort could not start" err="start group coordinator: load shard 3: `},
		},
		{
			what: "bad flag combination",
			prepare: func(*testing.T, string) []string {
				return []string{"--max-request-bytes", "2000000", "--queued-max-request-bytes", "1000000"}
			},
			code: 2, reuse: true,
			line: []string{"cohort serve: --queued-max-request-bytes (1000000) must be at least --max-request-bytes (2000000), or -1 for no limit"},
		},
	} {
		t.Run(tc.what, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"serve", "--kafka-listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--data-dir", dir}, tc.prepare(t, dir)...)
			bin := testkit.Binary(t)
			if tc.asUser && os.Geteuid() == 0 {
				bin = unprivilegedCopy(t, bin)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			if tc.asUser && os.Geteuid() == 0 {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			}
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Fatalf("err=%v, want exit code %d; output:\n%s", err, tc.code, out)
			}
			text := strings.TrimRight(string(out), "\n")
			t.Logf("exit %d: %s", ee.ExitCode(), text)
			if strings.Contains(text, "\n") {
				t.Errorf("more than one line:\n%s", text)
			}
			for _, want := range tc.line {
				if !strings.Contains(text, want) {
					t.Errorf("the line does not contain %q:\n%s", want, text)
				}
			}
			for _, bad := range []string{"panic", "goroutine "} {
				if strings.Contains(text, bad) {
					t.Errorf("output mentions %q:\n%s", bad, text)
				}
			}
			if tc.reuse {
				// Nothing left locked or bound: the same directory serves.
				p := testkit.StartBinary(t, dir)
				if code := p.Stop(30 * time.Second); code != 0 {
					t.Errorf("a server on the directory afterwards exited %d:\n%s", code, p.Log())
				}
			}
		})
	}
}

// startStop starts a node on dir in process and shuts it down, leaving a
// valid data directory.
func startStop(t *testing.T, dir string) {
	t.Helper()
	n, err := node.Start(node.Config{KafkaListen: "127.0.0.1:0", GRPCListen: "-", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// garble overwrites the files matching pattern with as many bytes of
// garbage.
func garble(t *testing.T, pattern string) {
	t.Helper()
	files, _ := filepath.Glob(pattern)
	if len(files) == 0 {
		t.Fatalf("no file matches %s", pattern)
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		const pattern = "\xde\xad garbage \xbe\xef\n"
		junk := []byte(strings.Repeat(pattern, int(fi.Size())/len(pattern)+1))[:fi.Size()]
		if err := os.WriteFile(f, junk, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// worldReadableDir is a fresh directory every user can enter.
func worldReadableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cohort-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// unprivilegedCopy copies the binary where user nobody can run it: root
// writes anywhere, so an unwritable directory needs another user.
func unprivilegedCopy(t *testing.T, bin string) string {
	t.Helper()
	dir := worldReadableDir(t)
	src, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(dir, "cohort")
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, src); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}
