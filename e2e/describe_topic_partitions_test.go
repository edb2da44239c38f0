package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dtpPartition is one partition as a DescribeTopicPartitions response
// described it, and on which page.
type dtpPartition struct {
	page                   int
	leader, epoch          int32
	replicas, isr, offline []int32
	elr, lastKnownELR      []int32
	topicID                [16]byte
}

// describeAllPages pages through DescribeTopicPartitions for the named
// topics (none: every topic), limit partitions at a time, following
// NextCursor until there is none, and returns every partition described,
// by "topic/partition". A partition described twice, a page over the
// limit or a topic error is an error.
func describeAllPages(r kmsg.Requestor, limit int32, names ...string) (map[string]dtpPartition, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[string]dtpPartition{}
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for page := 0; page < 100; page++ {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, name := range names {
			req.Topics = append(req.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: name})
		}
		req.ResponsePartitionLimit, req.Cursor = limit, cursor
		resp, err := req.RequestWith(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("page %d: %w", page, err)
		}
		n := 0
		for _, st := range resp.Topics {
			if err := kerr.ErrorForCode(st.ErrorCode); err != nil || st.Topic == nil {
				return nil, fmt.Errorf("page %d: topic %v: %v", page, st.Topic, err)
			}
			for _, sp := range st.Partitions {
				key := fmt.Sprintf("%s/%d", *st.Topic, sp.Partition)
				if prev, ok := got[key]; ok {
					return nil, fmt.Errorf("%s described on page %d and again on page %d", key, prev.page, page)
				}
				if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
					return nil, fmt.Errorf("%s: %w", key, err)
				}
				got[key] = dtpPartition{page, sp.LeaderID, sp.LeaderEpoch, sp.Replicas, sp.ISR, sp.OfflineReplicas, sp.EligibleLeaderReplicas, sp.LastKnownELR, st.TopicID}
				n++
			}
		}
		if n > int(limit) {
			return nil, fmt.Errorf("page %d: %d partitions, over the limit %d", page, n, limit)
		}
		if resp.NextCursor == nil {
			return got, nil
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	return nil, fmt.Errorf("no end after 100 pages")
}

// TestDescribeTopicPartitionsFranz: franz-go's encoder and decoder page
// through DescribeTopicPartitions (KIP-966) against a two-node cluster,
// three partitions at a time across two topics of 7 and 4 partitions led
// by different nodes, following NextCursor: every partition is described
// exactly once, with the leader it was created on and the topic's id, and
// the ELR lists empty, not null. Every topic, paged the same way, adds
// __consumer_offsets, each shard's partition led by its coordinator. With
// node 2 killed, its partitions are described with no leader and node 2
// offline, as Kafka describes a partition whose leader is gone.
func TestDescribeTopicPartitionsFranz(t *testing.T) {
	c := startCluster(t, 1, 2)
	c.createTopicOn("dtp-a", 7, 1, 2)
	c.createTopicOn("dtp-b", 4, 2, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topics, err := c.admin().ListTopics(ctx, "dtp-a", "dtp-b")
	if err != nil {
		t.Fatal(err)
	}
	// Leaders as created: dtp-a's round robin from node 1, dtp-b's from 2.
	want := map[string]int32{}
	for p := range int32(7) {
		want[fmt.Sprintf("dtp-a/%d", p)] = []int32{1, 2}[p%2]
	}
	for p := range int32(4) {
		want[fmt.Sprintf("dtp-b/%d", p)] = []int32{2, 1}[p%2]
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.node(2).Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	got, err := describeAllPages(cl, 3, "dtp-b", "dtp-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("%d partitions described, want %d: %v", len(got), len(want), slices.Sorted(maps.Keys(got)))
	}
	pages := 0
	for key, leader := range want {
		d, ok := got[key]
		if !ok {
			t.Errorf("%s never described", key)
			continue
		}
		pages = max(pages, d.page+1)
		topic := key[:len("dtp-a")]
		if d.leader != leader || d.epoch != 0 || !slices.Equal(d.replicas, []int32{leader}) || !slices.Equal(d.isr, []int32{leader}) || len(d.offline) != 0 {
			t.Errorf("%s: %+v, want led by %d", key, d, leader)
		}
		if d.elr == nil || len(d.elr) != 0 || d.lastKnownELR == nil || len(d.lastKnownELR) != 0 {
			t.Errorf("%s: ELR %#v, last known ELR %#v, want empty lists", key, d.elr, d.lastKnownELR)
		}
		if d.topicID != topics[topic].ID {
			t.Errorf("%s: topic id %x, want %x", key, d.topicID, topics[topic].ID)
		}
	}
	if pages != 4 {
		t.Errorf("%d pages for 11 partitions three at a time, want 4", pages)
	}

	all, err := describeAllPages(cl, 5)
	if err != nil {
		t.Fatal(err)
	}
	for key, leader := range want {
		if d, ok := all[key]; !ok || d.leader != leader {
			t.Errorf("every topic: %s %+v, want led by %d", key, d, leader)
		}
	}
	shards := 0
	for key, d := range all {
		if _, ok := want[key]; ok {
			continue
		}
		var p int
		if _, err := fmt.Sscanf(key, "__consumer_offsets/%d", &p); err != nil {
			t.Errorf("every topic: %s described", key)
			continue
		}
		shards++
		if d.leader != 1 && d.leader != 2 {
			t.Errorf("every topic: %s led by %d", key, d.leader)
		}
	}
	if shards == 0 {
		t.Error("every topic: no __consumer_offsets partition")
	}

	c.node(2).Kill()
	cl1, err := kgo.NewClient(kgo.SeedBrokers(c.node(1).Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl1.Close()
	groupEventually(t, 30*time.Second, "node 2's partitions described offline", func() (bool, string) {
		got, err := describeAllPages(cl1, 3, "dtp-a", "dtp-b")
		if err != nil {
			return false, err.Error()
		}
		for key, leader := range want {
			d := got[key]
			if leader == 1 && (d.leader != 1 || len(d.offline) != 0) {
				return false, fmt.Sprintf("%s: %+v", key, d)
			}
			if leader == 2 && (d.leader != -1 || !slices.Equal(d.replicas, []int32{2}) || !slices.Equal(d.offline, []int32{2})) {
				return false, fmt.Sprintf("%s: %+v", key, d)
			}
		}
		return true, ""
	})
}

// jsPage is one page the platformatic script printed.
type jsPage struct {
	Kind      string `json:"kind"`
	Described []struct {
		Topic        string  `json:"topic"`
		ID           string  `json:"id"`
		Internal     bool    `json:"internal"`
		Ops          int32   `json:"ops"`
		P            int32   `json:"p"`
		Leader       int32   `json:"leader"`
		Epoch        int32   `json:"epoch"`
		Replicas     []int32 `json:"replicas"`
		ISR          []int32 `json:"isr"`
		ELR          []int32 `json:"elr"`
		LastKnownELR []int32 `json:"last_known_elr"`
		Offline      []int32 `json:"offline"`
	} `json:"described"`
	Next *struct {
		TopicName      string `json:"topicName"`
		PartitionIndex int32  `json:"partitionIndex"`
	} `json:"next"`
}

// TestDescribeTopicPartitionsPlatformatic: @platformatic/kafka 1.35.0's
// own encoder and decoder of DescribeTopicPartitions v0 (Node.js, its
// low-level describeTopicPartitionsV0) page through two topics of 5 and 2
// partitions two at a time against the real server, following
// nextCursor: the pages are Kafka's (the cursor at the first partition
// left out, crossing from one topic to the next), every partition appears
// once, led by node 0, with the topic's id.
func TestDescribeTopicPartitionsPlatformatic(t *testing.T) {
	dir := jsDir(t)
	n := testkit.StartNode(t, node.Config{})
	extCreateTopic(t, n.KafkaAddr(), "js-a", 5)
	extCreateTopic(t, n.KafkaAddr(), "js-b", 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx, "js-a", "js-b")
	if err != nil {
		t.Fatal(err)
	}

	spec := map[string]any{"bootstrap": n.KafkaAddr(), "topics": []string{"js-b", "js-a"}, "limit": 2}
	outb := extRun(t, nil, "node", filepath.Join(dir, "describe_topic_partitions.mjs"), writeSpec(t, "describe_topic_partitions", spec))
	var pages []string
	seen := map[string]bool{}
	done := false
	for _, l := range bytes.Split(bytes.TrimSpace(outb), []byte("\n")) {
		var pg jsPage
		if err := json.Unmarshal(l, &pg); err != nil {
			t.Fatalf("output line %q: %v", l, err)
		}
		if pg.Kind == "done" {
			done = true
			continue
		}
		var parts []string
		for _, d := range pg.Described {
			key := fmt.Sprintf("%s/%d", d.Topic, d.P)
			parts = append(parts, key)
			if seen[key] {
				t.Errorf("%s described twice", key)
			}
			seen[key] = true
			id := uuid(topics[d.Topic].ID)
			if d.ID != id || d.Internal || d.Ops == -2147483648 || d.Leader != 0 || d.Epoch != 0 ||
				!slices.Equal(d.Replicas, []int32{0}) || !slices.Equal(d.ISR, []int32{0}) ||
				len(d.ELR) != 0 || len(d.LastKnownELR) != 0 || len(d.Offline) != 0 {
				t.Errorf("%s: %+v (topic id %s)", key, d, id)
			}
		}
		if pg.Next != nil {
			parts = append(parts, fmt.Sprintf("next=%s/%d", pg.Next.TopicName, pg.Next.PartitionIndex))
		}
		pages = append(pages, strings.Join(parts, " "))
	}
	if !done {
		t.Fatalf("the script did not finish:\n%s", outb)
	}
	want := []string{
		"js-a/0 js-a/1 next=js-a/2",
		"js-a/2 js-a/3 next=js-a/4",
		"js-a/4 js-b/0 next=js-b/1",
		"js-b/1",
	}
	if !slices.Equal(pages, want) {
		t.Errorf("pages:\n%s\nwant:\n%s", strings.Join(pages, "\n"), strings.Join(want, "\n"))
	}
}

// uuid formats a topic id as the Java client and @platformatic/kafka
// print it.
func uuid(id [16]byte) string {
	h := hex.EncodeToString(id[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
