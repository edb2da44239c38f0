// Command cohort runs and administers Cohort, a consumer-group coordinator
// that speaks the Kafka protocol.
//
//	cohort serve     run a node
//	cohort groups    list, describe, delete and seek consumer groups
//	cohort bench     load-generate commits, joins or heartbeats against a broker
//	cohort users     add, delete and list SCRAM users
//	cohort orgs      list, create and delete organisations, and their members
//	cohort quotas    set, remove and list organisations' quotas
//	cohort dev       dev cluster: a local cluster (an etcd child process, N nodes in one process)
//	cohort version   print the version
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `Cohort: a consumer-group coordinator for the Kafka protocol.

Usage:
  cohort <command> [flags]

Commands:
  serve     run a Cohort node (Kafka listener, embedded store, topic log)
  groups    list, describe, lag, delete, delete-offsets, seek consumer groups
            (Kafka protocol: works against any Kafka-compatible broker)
  bench     load generator: commits, join, heartbeats against Cohort, kfake
            or any Kafka-compatible broker (offsets/s, p50/p99, generations)
  users     add, delete, list SCRAM users of the SASL listeners
  orgs      list, create, delete organisations (tenants) and set their members
            (over a node's admin HTTP API)
  quotas    set, remove, list organisations' quotas (Kafka's client-quota APIs)
  dev cluster
            a local cluster for trying cluster mode: an etcd child
            process and N nodes (--nodes 3); Ctrl-C stops them
  version   print the version

Run 'cohort <command> --help' for a command's flags.
`

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		runtime.GOMAXPROCS(serveProcs(os.Getenv("GOMAXPROCS"), runtime.GOMAXPROCS(0)))
		if wantHeapFloor(os.Getenv("GOGC"), os.Getenv("GOMEMLIMIT")) {
			keepHeapFloor(heapFloor)
			gcFloor = heapFloor
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// fsyncProcs is how many more Ps than Go's default `cohort serve` runs
// with. A goroutine waiting in fsync (the store's journal, a topic
// partition's segment) keeps its P until the runtime's monitor hands it
// off, which takes from 20 µs to 10 ms depending on how idle the monitor
// thinks the process is; on a small machine with several syncs under way
// at once, the goroutines that would answer requests wait for a P
// meanwhile (the execution trace's scheduler-latency profile of the
// transaction benchmark showed dozens runnable at once with one core
// busy). Measured out of process on 2 cores (BENCHMARKS.md, issue 16):
// 2 more Ps, about 23 % more transactions/s (medians) at 16 and 64
// producers, and no change to commits or heartbeats beyond the noise.
const fsyncProcs = 2

// serveProcs is the GOMAXPROCS for `cohort serve`: the runtime's default
// (procs: the CPUs, or the container's CPU limit) plus fsyncProcs, unless
// the GOMAXPROCS environment variable sets it (env: its value), which
// wins as it does for any Go program.
func serveProcs(env string, procs int) int {
	if env != "" {
		return procs
	}
	return procs + fsyncProcs
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "groups":
		return groups(args[1:], stdout, stderr)
	case "bench":
		return bench(args[1:], stdout, stderr)
	case "users":
		return users(args[1:], os.Stdin, stdout, stderr)
	case "orgs":
		return orgs(args[1:], stdout, stderr)
	case "quotas":
		return quotas(args[1:], stdout, stderr)
	case "dev":
		return dev(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, versionString())
		return 0
	case "help", "--help", "-help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "cohort: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

func versionString() string {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok && v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	return fmt.Sprintf("cohort %s (%s %s/%s)", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// envName is the environment variable that sets a flag: COHORT_ and the
// flag's name in capitals with dashes as underscores.
func envName(flagName string) string {
	return "COHORT_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags parses args, then fills every flag not given on the command
// line from its environment variable: flags win over the environment. It
// returns the exit code for a bad command line (2, with the error and a
// pointer to --help; 0 for --help, with the usage) and false, or 0 and
// true to go on.
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	pos, code, ok := parseFlagsArgs(fs, args)
	if ok && len(pos) > 0 {
		return badCommandLine(fs, fmt.Errorf("unexpected argument %q", pos[0])), false
	}
	return code, ok
}

// parseFlagsArgs is parseFlags for commands that take arguments: flags
// and arguments may come in any order (`cohort groups describe g1
// --brokers b:9092`), and everything after "--" is an argument. It returns
// the arguments in order.
func parseFlagsArgs(fs *flag.FlagSet, args []string) ([]string, int, bool) {
	pos, err := parseArgs(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return nil, 0, false
	case err != nil:
		return nil, badCommandLine(fs, err), false
	}
	return pos, 0, true
}

// badCommandLine prints err and where to find the flags, not the whole
// usage: a screenful of flags would scroll the one line that matters away.
// It returns the exit code, 2.
func badCommandLine(fs *flag.FlagSet, err error) int {
	fmt.Fprintf(fs.Output(), "%s: %v\nRun '%s --help' for the flags.\n", fs.Name(), err, fs.Name())
	return 2
}

// parseArgs parses args and the environment for parseFlagsArgs. It
// returns flag.ErrHelp for -h or --help, and prints nothing: the flag
// package would print the whole usage after an error.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	defer func() {
		fs.Usage = usage
		fs.SetOutput(out)
	}()
	defer explainDurations(fs)()

	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var bad error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || bad != nil {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if err := fs.Set(f.Name, v); err != nil {
				bad = fmt.Errorf("invalid value %q for %s: %v", v, envName(f.Name), err)
			}
		}
	})
	return pos, bad
}

// explainDurations makes every duration flag of fs say what a bad value
// lacks (the flag package says only "parse error") until the function
// it returns puts the flags back: --help names a wrapped flag's type
// "value", not "duration".
func explainDurations(fs *flag.FlagSet) (restore func()) {
	var wrapped []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(time.Duration); ok {
				f.Value = durationFlag{f.Value}
				wrapped = append(wrapped, f)
			}
		}
	})
	return func() {
		for _, f := range wrapped {
			f.Value = f.Value.(durationFlag).Value
		}
	}
}

// durationFlag is a duration flag whose bad value gets an error that says
// what a duration looks like.
type durationFlag struct{ flag.Value }

func (d durationFlag) Set(s string) error {
	if d.Value.Set(s) == nil {
		return nil
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return errors.New("a duration needs a unit, such as 5s or 500ms")
	}
	return errors.New("not a duration: a number and a unit, such as 5s or 500ms")
}

// subcommand reads the first argument of a command that has
// subcommands (`cohort groups`, `cohort bench`): none prints usage to
// stderr and exits 2, help prints it to stdout and exits 0, an unknown
// one says so and exits 2. ok is true when args[0] is a known subcommand.
func subcommand(cmd, usage string, args []string, known func(string) bool, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2, false
	}
	switch args[0] {
	case "help", "--help", "-help", "-h":
		fmt.Fprint(stdout, usage)
		return 0, false
	}
	if !known(args[0]) {
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n%s", cmd, args[0], usage)
		return 2, false
	}
	return 0, true
}

// brokerFlags adds the flags every Kafka-speaking command takes:
// --brokers and --format.
func brokerFlags(fs *flag.FlagSet, brokers, format *string) {
	fs.StringVar(brokers, "brokers", "127.0.0.1:9092", "`host:port,...` of seed brokers (env COHORT_BROKERS)")
	fs.StringVar(format, "format", "text", "output `format`: text (tables) or json")
}

// splitBrokers parses --brokers: comma-separated, blanks dropped.
func splitBrokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}
