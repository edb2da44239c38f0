package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// put writes key=value through cli, failing the test on error.
func put(t *testing.T, cli *clientv3.Client, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, key, value); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// get reads key through cli with a linearizable read within timeout.
func get(cli *clientv3.Client, key string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", errors.New("not found")
	}
	return string(resp.Kvs[0].Value), nil
}

// mustGet fails the test unless key reads as want within timeout.
func mustGet(t *testing.T, cli *clientv3.Client, key, want string, timeout time.Duration) {
	t.Helper()
	got, err := get(cli, key, timeout)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if got != want {
		t.Fatalf("get %s = %q, want %q", key, got, want)
	}
}

func TestProcs(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := StartProcs(t, 3)
	t.Logf("3 etcd processes ready in %v", time.Since(start))
	if n := len(c.Endpoints()); n != 3 {
		t.Fatalf("%d endpoints, want 3", n)
	}
	cli := NewClient(t, c.Endpoints())
	put(t, cli, "k", "v1")
	mustGet(t, cli, "k", "v1", 5*time.Second)

	// Two of three keep a quorum: linearizable reads and writes go on,
	// after an election if member 1 led.
	c.Kill(1)
	start = time.Now()
	mustGet(t, cli, "k", "v1", 10*time.Second)
	put(t, cli, "k", "v2")
	t.Logf("read and write after Kill(1) in %v", time.Since(start))

	// Restarted, member 1 catches up with the write it missed.
	start = time.Now()
	c.Restart(1)
	t.Logf("member 1 restarted and readable in %v", time.Since(start))
	mustGet(t, NewClient(t, c.Endpoints()[1:2]), "k", "v2", 5*time.Second)

	c.Stop(2)
	mustGet(t, cli, "k", "v2", 10*time.Second)
}

// TestProcsWithFlags: StartProcsWith hands its flags to every member
// (here etcd's limit of operations per transaction).
func TestProcsWithFlags(t *testing.T) {
	t.Parallel()
	c := StartProcsWith(t, 1, "--max-txn-ops=4")
	cli := NewClient(t, c.Endpoints())
	ops := func(n int) []clientv3.Op {
		var out []clientv3.Op
		for i := range n {
			out = append(out, clientv3.OpPut(fmt.Sprint("k", i), "v"))
		}
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Txn(ctx).Then(ops(4)...).Commit(); err != nil {
		t.Fatalf("a transaction of 4 puts: %v", err)
	}
	if _, err := cli.Txn(ctx).Then(ops(5)...).Commit(); err == nil {
		t.Fatal("a transaction of 5 puts passed --max-txn-ops=4: the flag did not reach etcd")
	}
}

func TestProxyCutHeal(t *testing.T) {
	t.Parallel()
	c := StartProcs(t, 1)
	ps := ProxyAll(t, c.Endpoints())
	cli := NewClient(t, ps.Endpoints())
	direct := NewClient(t, c.Endpoints())
	put(t, cli, "k", "v")
	mustGet(t, cli, "k", "v", 5*time.Second)

	ps.Cut()
	_, err := get(cli, "k", 500*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) && status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("get through a cut proxy: %v, want a deadline error", err)
	}
	// Only the proxied client is cut off.
	put(t, direct, "k", "v2")

	ps.Heal()
	start := time.Now()
	mustGet(t, cli, "k", "v2", 10*time.Second)
	t.Logf("read through the healed proxy in %v", time.Since(start))
}

// A cut longer than gRPC's first reconnection backoffs does not make the
// client wait long after Heal: the proxy stalls its reconnection
// attempts rather than refusing them.
func TestProxyLongCut(t *testing.T) {
	t.Parallel()
	c := StartProcs(t, 1)
	ps := ProxyAll(t, c.Endpoints())
	cli := NewClient(t, ps.Endpoints())
	put(t, cli, "k", "v")

	ps.Cut()
	for range 3 {
		if _, err := get(cli, "k", time.Second); err == nil {
			t.Fatal("get through a cut proxy succeeded")
		}
	}
	ps.Heal()
	start := time.Now()
	mustGet(t, cli, "k", "v", time.Second)
	t.Logf("read through the healed proxy in %v", time.Since(start))
}
