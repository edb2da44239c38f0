// Package machinetest is the kit the tests of the pure machines
// (coordinator/txn, coordinator/sharestate) share: scenario files (a
// command, "----", what it printed; rewritten with -rewrite), the timers a
// machine sets, fired in fake time, and a test double whose Fatalf panics,
// for property schedules that stop at the first broken invariant and print
// their trace.
//
// It is imported by tests only (internal/guard checks it).
package machinetest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kerr"
)

var rewrite = flag.Bool("rewrite", false, "regenerate the expected output of testdata/*.txt")

// Scenarios runs each file matching glob as a subtest. A file is blocks
// of a command line, "----" and the lines the command printed; blank lines
// and lines starting with # between blocks are kept as they are. start is
// called once per file and returns the function that runs one command
// and returns what it printed. With -rewrite the files are written with
// what the commands printed instead of being compared: review the diff.
func Scenarios(t *testing.T, glob string, start func(t *testing.T) func(cmd string) []string) {
	files, _ := filepath.Glob(glob)
	if len(files) == 0 {
		t.Fatalf("no scenario files match %s", glob)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runFile(t, f, start(t)) })
	}
}

func runFile(t *testing.T, path string, run func(string) []string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	var out []string
	for i := 0; i < len(lines); {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			out = append(out, l)
			i++
			continue
		}
		cmd := l
		i++
		if i >= len(lines) || lines[i] != "----" {
			t.Fatalf("%s:%d: command %q has no ---- line", path, i, cmd)
		}
		i++
		var want []string
		for i < len(lines) && lines[i] != "" {
			want = append(want, lines[i])
			i++
		}
		got := run(cmd)
		out = append(out, cmd, "----")
		out = append(out, got...)
		if !*rewrite && strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: %s\n got:\n%s\nwant:\n%s", path, cmd, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Timers are the timers a machine has set, by key.
type Timers map[string]time.Time

// Apply sets and cancels timers as an event's output says.
func (ts Timers) Apply(out []machine.Timer) {
	for _, tm := range out {
		if tm.At.IsZero() {
			delete(ts, tm.Key)
		} else {
			ts[tm.Key] = tm.At
		}
	}
}

// Due removes and returns the earliest timer due by end (ties in key
// order), or ok false if none is.
func (ts Timers) Due(end time.Time) (key string, at time.Time, ok bool) {
	for k, t := range ts {
		if !t.After(end) && (!ok || t.Before(at) || t.Equal(at) && k < key) {
			key, at, ok = k, t, true
		}
	}
	if ok {
		delete(ts, key)
	}
	return key, at, ok
}

// Advance moves *now on by d, firing each timer that comes due on the way
// in order, with *now at its time.
func (ts Timers) Advance(now *time.Time, d time.Duration, fire func(key string)) {
	end := now.Add(d)
	for {
		key, at, ok := ts.Due(end)
		if !ok {
			break
		}
		if at.After(*now) {
			*now = at
		}
		fire(key)
	}
	*now = end
}

// TB is what a harness needs of a test: a *testing.T, or Panicking.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// CodeName is a Kafka error code's name, NONE for 0, as scenario files
// print answers.
func CodeName(c int16) string {
	if c == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(c).(*kerr.Error).Message
}

// Failure is what a Panicking test double panics with.
type Failure struct{ Msg string }

// Panicking is a test double whose Fatalf panics with a Failure, so that
// a property schedule stops at the first broken invariant and Catch
// reports it with the schedule's trace.
type Panicking struct{}

// Helper does nothing.
func (Panicking) Helper() {}

// Fatalf panics with a Failure.
func (Panicking) Fatalf(format string, args ...any) {
	panic(Failure{fmt.Sprintf(format, args...)})
}

// Catch runs f and returns the message of the Failure it panicked with
// ("" if none), and the last keep lines of trace (as trace is when f
// stops), indented; any other panic goes on.
func Catch(f func(), trace *[]string, keep int) (msg, last string) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		fl, ok := r.(Failure)
		if !ok {
			panic(r)
		}
		msg = fl.Msg
		lines := *trace
		if len(lines) > keep {
			lines = lines[len(lines)-keep:]
		}
		for _, l := range lines {
			last += "  " + l + "\n"
		}
	}()
	f()
	return "", ""
}
