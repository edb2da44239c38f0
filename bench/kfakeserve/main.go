// Command kfakeserve runs franz-go's kfake, a one-broker fake Kafka
// cluster, as its own process, so that bench/side-by-side.sh can measure
// it with `cohort bench` exactly as it measures Cohort. It is a benchmark
// fixture, not a server to rely on.
//
// It listens on 127.0.0.1, on a free port, and prints one line,
// "kfake listening addr=HOST:PORT", once it accepts connections; it runs
// until SIGINT or SIGTERM. In memory by default; with --fsync it keeps its
// state in --data-dir and fsyncs every write (kfake's DataDir and
// SyncWrites), the configuration to compare with Cohort's durable commits.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	fsync := flag.Bool("fsync", false, "persist to --data-dir and fsync every write")
	dataDir := flag.String("data-dir", "", "`directory` for --fsync (required with it)")
	flag.Parse()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(0)}
	if *fsync {
		if *dataDir == "" {
			fmt.Fprintln(os.Stderr, "kfakeserve: --fsync needs --data-dir")
			os.Exit(2)
		}
		opts = append(opts, kfake.DataDir(*dataDir), kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfakeserve: %v\n", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Printf("kfake listening addr=%s\n", c.ListenAddrs()[0])
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
}
