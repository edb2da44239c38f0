// Command embedded-cluster shows a Go program (a Kafka broker or gateway
// of its own) embedding Cohort's group coordinator in cluster mode: the
// coordinator's records in etcd, its shards leased to the program's
// instances, failing over when one dies.
//
// Run two or more instances against one etcd, each with its own -node:
//
//	go run ./examples/embedded-cluster -etcd http://127.0.0.1:2379 -node 1
//	go run ./examples/embedded-cluster -etcd http://127.0.0.1:2379 -node 2
//
// Every few seconds each instance commits an offset for a group and
// fetches it back, if it serves the group's shard, and otherwise says
// which node does (the node a Kafka client would be sent to by
// FindCoordinator). Ctrl-C hands the instance's shards to the others
// before it exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cohort-dev/cohort/cluster"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/store/etcd"
)

func main() {
	endpoints := flag.String("etcd", "http://127.0.0.1:2379", "etcd client URLs, comma-separated")
	id := flag.Int("node", 1, "this instance's node id, unique")
	addr := flag.String("addr", "", "the host:port Kafka clients would reach this instance at (default 127.0.0.1:9000+node)")
	group := flag.String("group", "example-group", "the group to commit for")
	flag.Parse()
	if *addr == "" {
		*addr = fmt.Sprintf("127.0.0.1:%d", 9000+*id)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(logger, strings.Split(*endpoints, ","), int32(*id), *addr, *group); err != nil {
		logger.Error("embedded-cluster", "err", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger, endpoints []string, id int32, addr, group string) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()

	// 1. Join the cluster: register under a lease, learn the shard count.
	const prefix = "/cohort-example"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	shards := coordinator.Config{}.WithDefaults().Shards
	m, err := cluster.Join(ctx, cluster.Config{
		Client: cli, Prefix: prefix, NodeID: id, KafkaAddr: addr,
		Units: shards + 1, Logger: logger,
	})
	if err != nil {
		return err
	}
	defer m.Close()

	// 2. The shared store, fenced by the member's lease, and a
	// coordinator that loads only the shards the cluster gives it.
	st, err := etcd.Open(etcd.Options{Client: cli, Prefix: cluster.DataPrefix(prefix), Lease: m.Lease()})
	if err != nil {
		return err
	}
	defer st.Close()
	cfg := coordinator.Config{Shards: m.Meta().Units - 1}
	co, err := coordinator.Start(cfg, coordinator.Options{Store: st, Logger: logger, Standby: true})
	if err != nil {
		return err
	}
	defer co.Close()

	// 3. Let the member drive the shards.
	m.Run(&cluster.Shards{Coordinator: co, Store: st})

	sig, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	tick := time.NewTicker(3 * time.Second)
	defer tick.Stop()
	for offset := int64(0); ; offset++ {
		select {
		case <-sig.Done():
			// 4. Hand the shards off warm, then leave.
			hctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return m.Leave(hctx)
		case <-tick.C:
		}
		shard := co.ShardFor("", group)
		if owner, ok := m.Owner(shard); ok && owner.ID != id {
			fmt.Printf("group %s: shard %d is served by node %d at %s\n", group, shard, owner.ID, owner.Kafka)
			continue
		}
		commit(co, group, offset)
	}
}

// commit hands the coordinator a decoded OffsetCommit, as a broker
// would, then an OffsetFetch, and prints what they answer.
func commit(co *coordinator.Coordinator, group string, offset int64) {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group, req.Generation = group, -1 // a simple (admin) commit
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "example-topic"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := co.Handle(context.Background(), coordinator.Request{Msg: req})().(*kmsg.OffsetCommitResponse)
	if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
		fmt.Printf("group %s: commit %d: %v\n", group, offset, err)
		return
	}
	f := kmsg.NewPtrOffsetFetchRequest()
	f.Version = 7
	f.Group = group
	fresp := co.Handle(context.Background(), coordinator.Request{Msg: f})().(*kmsg.OffsetFetchResponse)
	for _, t := range fresp.Topics {
		for _, p := range t.Partitions {
			fmt.Printf("group %s: committed %s/%d at %d (durable in etcd)\n", group, t.Topic, p.Partition, p.Offset)
		}
	}
}
