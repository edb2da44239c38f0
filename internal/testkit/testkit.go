// Package testkit holds what Cohort's tests share: starting a node in
// process or the real binary as a child process on 127.0.0.1, and waiting
// for conditions with deadlines instead of sleeping.
//
// It is for tests only and must not be imported by non-test code.
package testkit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/node"
)

// StartNode runs a node in this process on a free 127.0.0.1 port with a
// fresh data dir (unless cfg.DataDir is set) and shuts it down when the
// test ends.
func StartNode(t testing.TB, cfg node.Config) *node.Node {
	t.Helper()
	if cfg.KafkaListen == "" {
		cfg.KafkaListen = "127.0.0.1:0"
	}
	if cfg.GRPCListen == "" {
		cfg.GRPCListen = "127.0.0.1:0"
	}
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	n, err := node.Start(cfg)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			t.Errorf("shutdown node: %v", err)
		}
	})
	return n
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Eventually calls cond until it returns true or timeout passes, then fails
// the test with msg. It polls at a short, growing interval: a wait for a
// condition, never a bet on how long something takes.
func Eventually(t testing.TB, timeout time.Duration, msg string, cond func() bool) {
	t.Helper()
	if !WaitFor(timeout, cond) {
		t.Fatalf("timed out after %v: %s", timeout, msg)
	}
}

// WaitFor is Eventually for a caller that has more to say on a timeout:
// it reports whether cond came true before timeout passed.
func WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	wait := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
		if wait < 100*time.Millisecond {
			wait *= 2
		}
	}
	return true
}

// Binary builds cmd/cohort once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	return Build(t, "./cmd/cohort")
}

// builds holds each package Build has built (or failed to): its path
// once built.
var builds sync.Map // package → *build

type build struct {
	once sync.Once
	path string
	err  error
}

// Build builds the main package pkg (a path from the module root, such
// as ./cmd/cohort) once per test process and returns the binary's path.
// Under the invariants build tag (as test.sh runs the suite) it builds
// with the tag too, so that the real binary checks its shards as the
// in-process nodes do.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	v, _ := builds.LoadOrStore(pkg, &build{})
	bd := v.(*build)
	bd.once.Do(func() {
		dir, err := os.MkdirTemp("", "cohort-bin-")
		if err != nil {
			bd.err = err
			return
		}
		bd.path = filepath.Join(dir, filepath.Base(pkg))
		args := []string{"build", "-o", bd.path}
		if invariants {
			args = append(args, "-tags", "invariants")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Dir = ModuleRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			bd.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if bd.err != nil {
		t.Fatal(bd.err)
	}
	return bd.path
}

// RemoveBuilds removes the binaries Build built in this process. A test
// package that builds them calls it from TestMain once its tests have
// run: each build is a directory of about 50 MB under the temporary
// directory, and a machine that runs the suite many times would keep
// every one.
func RemoveBuilds() {
	builds.Range(func(_, v any) bool {
		if bd := v.(*build); bd.path != "" {
			os.RemoveAll(filepath.Dir(bd.path))
		}
		return true
	})
}

// ModuleRoot is the repository root, found from this file's location.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Proc is the cohort binary running as a child process.
type Proc struct {
	t    testing.TB
	cmd  *exec.Cmd
	Addr string // the bound Kafka address, read from the start-up log line
	// GRPCAddr is the bound gRPC address, read from its log line.
	GRPCAddr string
	// HTTPAddr is the bound admin HTTP address, read from its log line.
	HTTPAddr string
	DataDir  string
	exited   chan struct{}
	logMu    sync.Mutex
	log      strings.Builder
}

var (
	listenLine = regexp.MustCompile(`msg="cohort listening" kafka=(\S+)`)
	grpcLine   = regexp.MustCompile(`msg="cohort assigner listening" grpc=(\S+)`)
	httpLine   = regexp.MustCompile(`msg="cohort admin listening" http=(\S+)`)
)

// StartBinary runs `cohort serve` on dataDir with a free port and extra
// args, waits for its start-up log line and kills it when the test ends.
func StartBinary(t testing.TB, dataDir string, args ...string) *Proc {
	t.Helper()
	bin := Binary(t)
	args = append([]string{"serve", "--kafka-listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--data-dir", dataDir}, args...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start cohort: %v", err)
	}
	p := &Proc{t: t, cmd: cmd, DataDir: dataDir, exited: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.logMu.Lock()
			p.log.WriteString(line + "\n")
			p.logMu.Unlock()
			if m := httpLine.FindStringSubmatch(line); m != nil {
				p.HTTPAddr = m[1] // before the Kafka line, so before Addr is read
			}
			if m := grpcLine.FindStringSubmatch(line); m != nil {
				p.GRPCAddr = m[1] // before the Kafka line, so before Addr is read
			}
			if m := listenLine.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("cohort log:\n%s", p.Log())
		}
	})
	select {
	case p.Addr = <-addr:
	case <-p.exited:
		t.Fatalf("cohort exited during start-up:\n%s", p.Log())
	case <-time.After(60 * time.Second):
		t.Fatalf("cohort did not log its address within 60s:\n%s", p.Log())
	}
	return p
}

// Log returns what the process has written to stderr so far.
func (p *Proc) Log() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.log.String()
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL and waits for the process to exit.
func (p *Proc) Kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) { p.cmd.Process.Signal(sig) }

// Stop sends SIGTERM and returns the exit code, failing the test if the
// process does not exit within timeout.
func (p *Proc) Stop(timeout time.Duration) int {
	p.t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.t.Fatalf("cohort did not exit within %v of SIGTERM", timeout)
	}
	return p.cmd.ProcessState.ExitCode()
}
