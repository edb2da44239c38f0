package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDevCluster runs `cohort dev cluster --nodes 3` on free ports, as
// main does but with a context for the signal: it prints every node's
// addresses and a ready line; any node's Metadata lists the three
// brokers, and an offset committed through the cluster is fetched back;
// the context's end (SIGINT in main) stops every node and etcd, and the
// command exits 0 with every node's listeners closed.
func TestDevCluster(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		defer outW.Close()
		done <- devCluster(ctx, []string{"--nodes", "3", "--kafka-port-base", "0", "--admin-port-base", "0", "--data-dir", t.TempDir()}, outW, &stderr)
	}()

	nodeLine := regexp.MustCompile(`^node (\d): kafka (127\.0\.0\.1:\d+)  admin http://(127\.0\.0\.1:\d+)  grpc (127\.0\.0\.1:\d+)`)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var kafkaAddrs, allAddrs []string
	deadline := time.After(2 * time.Minute)
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("output ended before the ready line; exit %d; stderr:\n%s", <-done, stderr.String())
			}
			t.Log(l)
			if m := nodeLine.FindStringSubmatch(l); m != nil {
				kafkaAddrs = append(kafkaAddrs, m[2])
				allAddrs = append(allAddrs, m[2], m[3], m[4])
			}
			if strings.HasPrefix(l, "ready: 3 nodes serving") {
				break wait
			}
		case <-deadline:
			cancel()
			t.Fatalf("no ready line within 2 minutes")
		}
	}
	// The rest of the output, read meanwhile.
	rest := make(chan []string, 1)
	go func() {
		var ls []string
		for l := range lines {
			ls = append(ls, l)
		}
		rest <- ls
	}()
	if len(kafkaAddrs) != 3 {
		t.Fatalf("%d nodes' Kafka addresses printed, want 3: %v", len(kafkaAddrs), kafkaAddrs)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddrs[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	md, err := adm.BrokerMetadata(rctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 3 {
		t.Fatalf("Metadata from node 2 lists %d brokers, want 3: %v", len(md.Brokers), md.Brokers)
	}
	const topic, group = "dev-cluster-t", "dev-cluster-g"
	if _, err := adm.CreateTopic(rctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 42, LeaderEpoch: -1})
	for {
		// A shard may still be settling: retry what the client does not.
		r, err := adm.CommitOffsets(rctx, group, offs)
		if err == nil {
			err = r.Error()
		}
		if err == nil {
			break
		}
		if rctx.Err() != nil {
			t.Fatalf("commit: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fetched, err := adm.FetchOffsets(rctx, group)
	if err == nil {
		err = fetched.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup(topic, 0); !ok || o.At != 42 {
		t.Fatalf("fetched offset %+v (found %v), want 42", o, ok)
	}
	cl.Close()

	cancel() // SIGINT
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d after the signal, want 0; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("still running a minute after the signal")
	}
	if ls := <-rest; len(ls) == 0 || ls[len(ls)-1] != "stopped" {
		t.Errorf("output after the ready line %q, want it to end with \"stopped\"", ls)
	}
	for _, a := range allAddrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after the command returned", a)
		}
	}
}

// TestDevClusterCommandLine: bad flags are exit 2 with a clear message,
// and the top-level usage lists dev cluster.
func TestDevClusterCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"dev", "cluster", "--nodes", "0"}, 2, "cohort dev cluster: --nodes must be between 1 and 9, not 0"},
		{[]string{"dev", "cluster", "--nodes", "10"}, 2, "--nodes must be between 1 and 9, not 10"},
		{[]string{"dev", "cluster", "--kafka-port-base", "65535"}, 2, "--kafka-port-base must be 0 (free ports) or between 1 and 65533 for 3 nodes, not 65535"},
		{[]string{"dev", "cluster", "--kafka-port-base", "9000", "--admin-port-base", "9002"}, 2, "overlap"},
		{[]string{"dev", "cluster", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"dev", "cluster", "--help"}, 0, "Usage: cohort dev cluster"},
		{[]string{"dev"}, 2, "Usage: cohort dev"},
		{[]string{"dev", "bogus"}, 2, `unknown command "bogus"`},
		{[]string{"--help"}, 0, "\n  dev cluster\n"},
	} {
		code, out, errOut := cliRun(tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.out) {
			t.Errorf("cohort %v: exit %d, want %d; output does not contain %q:\n%s%s", tc.args, code, tc.code, tc.out, out, errOut)
		}
	}
	// A port in use is named, before anything starts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	code, _, errOut := cliRun("dev", "cluster", "--nodes", "1", "--kafka-port-base", strconv.Itoa(port), "--admin-port-base", "0", "--data-dir", dir)
	if want := "port " + strconv.Itoa(port) + " (node 1's Kafka listener) is in use"; code != 2 || !strings.Contains(errOut, want) {
		t.Errorf("with port %d taken: exit %d, want 2 and %q:\n%s", port, code, want, errOut)
	}
}
