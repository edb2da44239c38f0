package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cohort-dev/cohort/cluster"
	"github.com/cohort-dev/cohort/node"
)

const devUsage = `Usage: cohort dev <command> [flags]

Commands:
  cluster   run a local cluster: an etcd (Debian's etcd-server, as a child
            process) and N Cohort nodes in cluster mode in this one
            process, until Ctrl-C

Run 'cohort dev <command> --help' for a command's flags.
`

// devReadyTimeout bounds how long dev cluster waits for every node to
// serve.
const devReadyTimeout = 90 * time.Second

// dev runs `cohort dev`: its subcommands stop on SIGINT or SIGTERM.
func dev(args []string, stdout, stderr io.Writer) int {
	if code, ok := subcommand("cohort dev", devUsage, args, func(a string) bool { return a == "cluster" }, stdout, stderr); !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// After the first signal, the default again: a second Ctrl-C during
	// the shutdown kills the process.
	context.AfterFunc(ctx, stop)
	return devCluster(ctx, args[1:], stdout, stderr)
}

// devCluster runs `cohort dev cluster` until ctx ends, then stops every
// node and etcd and returns 0.
func devCluster(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cohort dev cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		nodes               int
		dir, logLevel       string
		kafkaBase, httpBase int
	)
	fs.IntVar(&nodes, "nodes", 3, "how many Cohort nodes, 1 to 9")
	fs.StringVar(&dir, "data-dir", "./cohort-dev-cluster", "`directory` of the cluster's state: etcd's in etcd/, node i's in node-i/; kept across runs (remove it to start afresh)")
	fs.IntVar(&kafkaBase, "kafka-port-base", 9092, "node i's Kafka listener is 127.0.0.1:`port`+i-1; 0 picks free ports")
	fs.IntVar(&httpBase, "admin-port-base", 9644, "node i's admin HTTP listener is 127.0.0.1:`port`+i-1; 0 picks free ports")
	fs.StringVar(&logLevel, "log-level", "warn", "the nodes' log `level` (on stderr): debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: cohort dev cluster [flags]

Runs a local Cohort cluster for trying cluster mode: an etcd (Debian's
etcd-server, run as a child process) and N Cohort nodes (ids 1 to N) in
cluster mode in this one process, every listener on 127.0.0.1. It prints each node's addresses and a ready line
once every node serves; Ctrl-C (SIGINT) or SIGTERM stops every node
cleanly, then etcd. Each node is configured as by 'cohort serve' with its
defaults (and COHORT_* environment variables of serve's other flags).

Flags:
`)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "cohort dev cluster: "+format+"\n", a...)
		return 2
	}
	if nodes < 1 || nodes > 9 {
		return bad("--nodes must be between 1 and 9, not %d", nodes)
	}
	for _, b := range []struct {
		name string
		port int
	}{{"--kafka-port-base", kafkaBase}, {"--admin-port-base", httpBase}} {
		if b.port < 0 || b.port+nodes-1 > 65535 {
			return bad("%s must be 0 (free ports) or between 1 and %d for %d nodes, not %d", b.name, 65536-nodes, nodes, b.port)
		}
	}
	if kafkaBase != 0 && httpBase != 0 && kafkaBase < httpBase+nodes && httpBase < kafkaBase+nodes {
		return bad("the Kafka ports %d-%d and the admin ports %d-%d overlap", kafkaBase, kafkaBase+nodes-1, httpBase, httpBase+nodes-1)
	}
	if dir == "" {
		return bad("--data-dir must not be empty")
	}
	// A port in use is said before anything starts, naming the port.
	if err := portsFree(nodes, kafkaBase, "Kafka listener"); err != nil {
		return bad("%v", err)
	}
	if err := portsFree(nodes, httpBase, "admin HTTP listener"); err != nil {
		return bad("%v", err)
	}

	// Each node is built as `cohort serve` builds it.
	cfgs := make([]node.Config, nodes)
	shutdowns := make([]time.Duration, nodes)
	for i := range nodes {
		id := i + 1
		nargs := []string{
			"--etcd-endpoints", "http://127.0.0.1:2379", // etcd's, once it runs
			"--node-id", strconv.Itoa(id),
			"--kafka-listen", portAddr(kafkaBase, i),
			"--http-listen", portAddr(httpBase, i),
			"--grpc-listen", "127.0.0.1:0",
			"--data-dir", filepath.Join(dir, "node-"+strconv.Itoa(id)),
			"--log-level", logLevel,
		}
		code := serveWith(nargs, stderr, func(cfg node.Config, logger *slog.Logger, shutdown time.Duration) int {
			cfg.Logger = logger.With("node", id)
			cfgs[i], shutdowns[i] = cfg, shutdown
			return 0
		})
		if code != 0 {
			return code
		}
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "cohort dev cluster: %v\n", err)
		return 1
	}
	etcd, err := startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		fmt.Fprintf(stderr, "cohort dev cluster: etcd: %v\n", err)
		return 1
	}
	endpoint := etcd.endpoint
	fmt.Fprintf(stdout, "etcd:   %s (data in %s)\n", endpoint, filepath.Join(dir, "etcd"))

	var started []*node.Node
	code := 0
	// shutdownAll stops the nodes one at a time, last first, so that each
	// hands its shards off warm to the nodes still up, then etcd.
	shutdownAll := func() {
		for i := len(started) - 1; i >= 0; i-- {
			sctx, cancel := context.WithTimeout(context.Background(), shutdowns[i])
			if err := started[i].Shutdown(sctx); err != nil {
				fmt.Fprintf(stderr, "cohort dev cluster: node %d: shutdown: %v\n", i+1, err)
				code = 1
			}
			cancel()
		}
		etcd.Close()
	}
	for i := range cfgs {
		cfg := cfgs[i]
		cc := *cfg.Cluster
		cc.EtcdEndpoints = []string{endpoint}
		cfg.Cluster = &cc
		n, err := node.Start(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "cohort dev cluster: node %d: %v\n", i+1, err)
			shutdownAll()
			return 1
		}
		started = append(started, n)
		fmt.Fprintf(stdout, "node %d: kafka %s  admin http://%s  grpc %s  data %s\n", i+1, n.KafkaAddr(), n.HTTPAddr(), n.GRPCAddr(), cfg.DataDir)
	}

	failed := make(chan error, len(started))
	for i, n := range started {
		go func() {
			if err, ok := <-n.Done(); ok {
				failed <- fmt.Errorf("node %d: listener stopped: %v", i+1, err)
			}
		}()
	}
	rctx, cancel := context.WithTimeout(ctx, devReadyTimeout)
	err = waitReady(rctx, started)
	cancel()
	switch {
	case ctx.Err() != nil:
	case err != nil:
		fmt.Fprintf(stderr, "cohort dev cluster: not ready within %v: %v\n", devReadyTimeout, err)
		shutdownAll()
		return 1
	default:
		addrs := make([]string, len(started))
		for i, n := range started {
			addrs[i] = n.KafkaAddr()
		}
		fmt.Fprintf(stdout, "ready: %d nodes serving, brokers %s (Ctrl-C stops them)\n", len(started), strings.Join(addrs, ","))
	}
	select {
	case <-ctx.Done():
	case err := <-failed:
		fmt.Fprintf(stderr, "cohort dev cluster: %v; stopping\n", err)
		code = 1
	}
	fmt.Fprintln(stdout, "stopping the nodes, then etcd")
	shutdownAll()
	if code == 0 {
		fmt.Fprintln(stdout, "stopped")
	}
	return code
}

// portAddr is node i's (from 0) 127.0.0.1 address from a port base; base
// 0 is a free port.
func portAddr(base, i int) string {
	if base == 0 {
		return "127.0.0.1:0"
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i))
}

// portsFree checks that the n ports from base on 127.0.0.1 can be
// listened on (none to check for base 0), naming the first that cannot.
func portsFree(n, base int, what string) error {
	if base == 0 {
		return nil
	}
	for i := range n {
		ln, err := net.Listen("tcp", portAddr(base, i))
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return fmt.Errorf("port %d (node %d's %s) is in use: stop what listens on it or choose other ports", base+i, i+1, what)
			}
			return fmt.Errorf("port %d (node %d's %s): %v", base+i, i+1, what, err)
		}
		ln.Close()
	}
	return nil
}

// devEtcd is the cluster's etcd: a child process of Debian's etcd
// (etcd-server), the one the test command installs. Cohort's own module
// does not require etcd's server (internal/guard's TestLibraryModule), so
// it is not embedded.
type devEtcd struct {
	cmd      *exec.Cmd
	endpoint string
	done     chan struct{}
}

// startEtcd starts a single-member etcd with its data in dir, on free
// 127.0.0.1 ports, and waits until it answers.
func startEtcd(dir string) (*devEtcd, error) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, fmt.Errorf("%v: install Debian's etcd-server (apt-get install etcd-server), as ./test.sh does", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for range 3 { // a port taken between the pick and the bind: others
		var e *devEtcd
		if e, err = tryStartEtcd(bin, dir); err == nil {
			return e, nil
		}
	}
	return nil, err
}

func tryStartEtcd(bin, dir string) (*devEtcd, error) {
	// Two distinct ports free a moment ago: both listeners open at once,
	// closed before etcd binds them.
	var urls []string
	var lns []net.Listener
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		urls = append(urls, "http://"+l.Addr().String())
	}
	for _, l := range lns {
		l.Close()
	}
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin,
		"--name", "cohort-dev",
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", urls[0], "--advertise-client-urls", urls[0],
		"--listen-peer-urls", urls[1], "--initial-advertise-peer-urls", urls[1],
		"--initial-cluster", "cohort-dev="+urls[1])
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e := &devEtcd{cmd: cmd, endpoint: urls[0], done: make(chan struct{})}
	go func() { cmd.Wait(); close(e.done) }()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.endpoint}, DialTimeout: 2 * time.Second})
	if err != nil {
		e.Close()
		return nil, err
	}
	defer cli.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "cohort-dev-ready")
		cancel()
		switch {
		case err == nil:
			return e, nil
		case time.Now().After(deadline):
			e.Close()
			return nil, fmt.Errorf("not answering within 30s (its log: %s): %v", logf.Name(), err)
		}
		select {
		case <-e.done:
			return nil, fmt.Errorf("exited at start (its log: %s)", logf.Name())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Close stops etcd: SIGTERM, then SIGKILL after 10 s.
func (e *devEtcd) Close() {
	e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(10 * time.Second):
		e.cmd.Process.Kill()
		<-e.done
	}
}

// waitReady waits until every node serves: every node's view of the
// cluster lists every node, the shards are spread (each node owns some,
// none is moving, and every node has the same assignment) and every
// node's /readyz answers 200.
func waitReady(ctx context.Context, nodes []*node.Node) error {
	client := &http.Client{Timeout: 2 * time.Second}
	var why error
	for {
		why = settled(nodes)
		for i, n := range nodes {
			if why != nil {
				break
			}
			if b := n.Member().Brokers(); len(b) != len(nodes) {
				why = fmt.Errorf("node %d sees %d of %d nodes", i+1, len(b), len(nodes))
				break
			}
			resp, err := client.Get("http://" + n.HTTPAddr() + "/readyz")
			if err != nil {
				why = fmt.Errorf("node %d: %v", i+1, err)
				break
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				why = fmt.Errorf("node %d: /readyz answers %s", i+1, resp.Status)
				break
			}
		}
		if why == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return why
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// settled says why the nodes' shard assignment is not settled yet, or
// nil: every node has the same one, with no shard moving or unowned, and
// every node owning at least one.
func settled(nodes []*node.Node) error {
	a := nodes[0].Member().Assignment()
	owns := map[int32]bool{}
	for u, o := range a.Owner {
		if o == cluster.None || (u < len(a.Next) && a.Next[u] != cluster.None) {
			return fmt.Errorf("shard %d is moving or unowned", u)
		}
		owns[o] = true
	}
	for i, n := range nodes {
		if !owns[n.Member().NodeID()] {
			return fmt.Errorf("node %d owns no shard yet", i+1)
		}
		if e := n.Member().Assignment().Epoch; e != a.Epoch {
			return fmt.Errorf("node %d has assignment %d, node 1 %d", i+1, e, a.Epoch)
		}
	}
	return nil
}
