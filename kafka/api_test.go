package kafka_test

// Wire-level tests of every API Cohort serves, through a raw TCP client
// (rawclient_test.go) against a node started in process: the golden list of
// supported versions, a sweep over every registered (key, version), and one
// test per documented error and behaviour.

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"github.com/cohort-dev/cohort/sharecoord"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/kafka"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var update = flag.Bool("update", false, "rewrite kafka/testdata/apiversions.golden and the fuzz seed corpus")

// startNode starts an in-process node and returns its Kafka address.
func startNode(t *testing.T, autoCreate bool) string {
	t.Helper()
	// No initial rebalance delay: a lone member's join completes at once.
	groups := coordinator.Config{InitialRebalanceDelay: -1}
	return testkit.StartNode(t, node.Config{AutoCreateTopics: autoCreate, Groups: groups}).KafkaAddr()
}

// wantCode fails the test unless got is want (nil: no error).
func wantCode(t testing.TB, what string, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Errorf("%s: error %s, want %s", what, codeName(got), codeName(w))
	}
}

func codeName(code int16) string {
	if code == 0 {
		return "none"
	}
	return fmt.Sprintf("%d (%v)", code, kerr.ErrorForCode(code))
}

// createTopic creates a topic with CreateTopics v7 and returns its id.
func createTopic(c *rawClient, name string, partitions int32, configs map[string]string) [16]byte {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp := roundTrip[*kmsg.CreateTopicsResponse](c, 7, req)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || resp.Topics[0].TopicID == [16]byte{} {
		c.t.Fatalf("create topic %s: %+v", name, resp.Topics)
	}
	return resp.Topics[0].TopicID
}

// createReq is a CreateTopics v7 request for one topic.
func createReq(name string, partitions int32, rf int16) (*kmsg.CreateTopicsRequest, *kmsg.CreateTopicsRequestTopic) {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	req.Topics = append(req.Topics, rt)
	return req, &req.Topics[0]
}

// metadataTopic asks Metadata v12 about one topic without auto-creating it.
func metadataTopic(c *rawClient, name string) kmsg.MetadataResponseTopic {
	c.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(name)
	req.Topics = append(req.Topics, rt)
	resp := roundTrip[*kmsg.MetadataResponse](c, 12, req)
	if len(resp.Topics) != 1 {
		c.t.Fatalf("metadata for %s: %d topics", name, len(resp.Topics))
	}
	return resp.Topics[0]
}

// exists reports whether the node has the topic, without creating it.
func exists(c *rawClient, name string) bool {
	c.t.Helper()
	return metadataTopic(c, name).ErrorCode == 0
}

// produceReq is a Produce request for one partition of one topic.
func produceReq(topic string, id [16]byte, partition int32, acks int16, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produce sends one batch with Produce v11, acks=-1, and returns the
// partition's response.
func produce(c *rawClient, topic string, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	c.t.Helper()
	return produceAt(c, 11, produceReq(topic, [16]byte{}, partition, -1, records))
}

func produceAt(c *rawClient, v int16, req *kmsg.ProduceRequest) kmsg.ProduceResponseTopicPartition {
	c.t.Helper()
	resp := roundTrip[*kmsg.ProduceResponse](c, v, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		c.t.Fatalf("produce: response %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// mustProduce produces and fails the test on any error.
func mustProduce(c *rawClient, topic string, partition int32, records []byte) int64 {
	c.t.Helper()
	sp := produce(c, topic, partition, records)
	if sp.ErrorCode != 0 {
		c.t.Fatalf("produce to %s-%d: error %s", topic, partition, codeName(sp.ErrorCode))
	}
	return sp.BaseOffset
}

// fetchReq is a Fetch request for one partition.
func fetchReq(topic string, id [16]byte, partition int32, offset int64, maxWait, minBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes = maxWait, minBytes
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchPartition sends req at v and returns the one partition answered.
func fetchPartition(c *rawClient, v int16, req *kmsg.FetchRequest) kmsg.FetchResponseTopicPartition {
	c.t.Helper()
	resp := roundTrip[*kmsg.FetchResponse](c, v, req)
	if resp.ErrorCode != 0 {
		c.t.Fatalf("fetch: top-level error %s", codeName(resp.ErrorCode))
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		c.t.Fatalf("fetch: response %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// listOffset asks ListOffsets v9 for one partition at timestamp ts.
func listOffset(c *rawClient, topic string, partition int32, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	c.t.Helper()
	return listOffsetAt(c, 9, topic, partition, ts)
}

func listOffsetAt(c *rawClient, v int16, topic string, partition int32, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	c.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := roundTrip[*kmsg.ListOffsetsResponse](c, v, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		c.t.Fatalf("list offsets: response %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// highWatermark is the partition's log end offset, from ListOffsets.
func highWatermark(c *rawClient, topic string, partition int32) int64 {
	c.t.Helper()
	sp := listOffset(c, topic, partition, -1)
	if sp.ErrorCode != 0 {
		c.t.Fatalf("list offsets %s-%d: %s", topic, partition, codeName(sp.ErrorCode))
	}
	return sp.Offset
}

// initProducerID gets a new idempotent producer id.
func initProducerID(c *rawClient) int64 {
	c.t.Helper()
	resp := roundTrip[*kmsg.InitProducerIDResponse](c, 4, kmsg.NewPtrInitProducerIDRequest())
	if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
		c.t.Fatalf("init producer id: error %s, id %d, epoch %d", codeName(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)
	}
	return resp.ProducerID
}

// ---- ApiVersions ----

const goldenPath = "testdata/apiversions.golden"

func formatKeys(keys []kmsg.ApiVersionsResponseApiKey) string {
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%d %s %d %d\n", k.ApiKey, kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion)
	}
	return b.String()
}

// formatFeatures renders the supported and finalized features (v3+,
// KIP-584), after the keys in the golden file.
func formatFeatures(resp *kmsg.ApiVersionsResponse) string {
	var b strings.Builder
	for _, f := range resp.SupportedFeatures {
		fmt.Fprintf(&b, "feature supported %s %d %d\n", f.Name, f.MinVersion, f.MaxVersion)
	}
	for _, f := range resp.FinalizedFeatures {
		fmt.Fprintf(&b, "feature finalized %s %d %d epoch %d\n", f.Name, f.MinVersionLevel, f.MaxVersionLevel, resp.FinalizedFeaturesEpoch)
	}
	return b.String()
}

// goldenKeys is the golden file without its features: what a v0–2
// answer (which has no features) lists.
func goldenKeys(golden string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(golden, "\n") {
		if !strings.HasPrefix(l, "feature ") {
			b.WriteString(l)
		}
	}
	return b.String()
}

func readGolden(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("%v (run go test ./kafka -run TestApiVersionsGolden -update to create it)", err)
	}
	return string(b)
}

// TestApiVersionsGolden: every ApiVersions version Cohort serves lists
// exactly the keys and ranges in testdata/apiversions.golden, and v3+
// the features after them (transaction.version finalized at 2, KIP-890
// part 2). -update rewrites the file from the server's answer.
func TestApiVersionsGolden(t *testing.T) {
	c := dial(t, startNode(t, true))
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "cohort-test", "1.0.0"
		resp := roundTrip[*kmsg.ApiVersionsResponse](c, v, req)
		wantCode(t, fmt.Sprintf("ApiVersions v%d", v), resp.ErrorCode, nil)
		got := formatKeys(resp.ApiKeys) + formatFeatures(resp)
		if v == 4 && *update {
			if err := os.WriteFile(goldenPath, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want := readGolden(t)
		if v < 3 {
			want = goldenKeys(want)
		}
		if got != want {
			t.Errorf("ApiVersions v%d keys:\n%s\nwant (%s):\n%s", v, got, goldenPath, want)
		}
	}
}

// TestApiVersionsUnsupportedVersion: an ApiVersions newer than Cohort
// serves (franz-go opens with v5) gets UNSUPPORTED_VERSION in v0 format
// with the supported ranges, and the connection stays open for the retry.
// The body of such a request is not parsed at all.
func TestApiVersionsUnsupportedVersion(t *testing.T) {
	addr := startNode(t, true)
	golden := readGolden(t)
	v0 := kmsg.NewPtrApiVersionsRequest()
	v0.SetVersion(0)
	check := func(t *testing.T, c *rawClient, corr int32) {
		t.Helper()
		got, body, err := c.readFrame(ioTimeout)
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		if got != corr {
			t.Fatalf("correlation id %d, want %d", got, corr)
		}
		resp := decodeResponse(t, v0, body).(*kmsg.ApiVersionsResponse)
		wantCode(t, "ApiVersions", resp.ErrorCode, kerr.UnsupportedVersion)
		if keys := formatKeys(resp.ApiKeys); keys != goldenKeys(golden) {
			t.Errorf("keys in the UNSUPPORTED_VERSION answer:\n%s\nwant:\n%s", keys, golden)
		}
		// The retry, on the same connection, at the highest version listed.
		hi := int16(-1)
		for _, k := range resp.ApiKeys {
			if k.ApiKey == kmsg.ApiVersions.Int16() {
				hi = k.MaxVersion
			}
		}
		retry := kmsg.NewPtrApiVersionsRequest()
		retry.ClientSoftwareName, retry.ClientSoftwareVersion = "franz-go", "1.22.2"
		if r := roundTrip[*kmsg.ApiVersionsResponse](c, hi, retry); r.ErrorCode != 0 || formatKeys(r.ApiKeys)+formatFeatures(r) != golden {
			t.Errorf("retry at v%d: error %s, keys:\n%s%s", hi, codeName(r.ErrorCode), formatKeys(r.ApiKeys), formatFeatures(r))
		}
	}

	t.Run("v5", func(t *testing.T) {
		c := dial(t, addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(5)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "franz-go", "1.22.2"
		check(t, c, c.send(req))
	})
	for _, v := range []int16{6, 127, -1} {
		t.Run(fmt.Sprintf("v%d garbage body", v), func(t *testing.T) {
			c := dial(t, addr)
			c.corr++
			frame := rawFrame(kmsg.ApiVersions.Int16(), v, c.corr, []byte{0xde, 0xad, 0xbe, 0xef})
			c.write(frame)
			check(t, c, c.corr)
		})
	}
}

// TestApiVersionsClientSoftware: v3+ validates the client software name and
// version against Kafka's pattern (KIP-511) and answers INVALID_REQUEST,
// keeping the connection open.
func TestApiVersionsClientSoftware(t *testing.T) {
	c := dial(t, startNode(t, true))
	cases := []struct {
		name, version string
		ok            bool
	}{
		{"franz-go", "1.22.2", true},
		{"a", "1", true},
		{"librdkafka.x-y", "2.3.0-RC1", true},
		{"", "1.0", false},
		{"-franz", "1.0", false},
		{"franz-", "1.0", false},
		{"franz go", "1.0", false},
		{"franz_go", "1.0", false},
		{"franz", "", false},
		{"franz", "1.0 beta", false},
		{"franz", "1.0.", false},
	}
	for v := int16(3); v <= 4; v++ {
		for _, tc := range cases {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = tc.name, tc.version
			resp := roundTrip[*kmsg.ApiVersionsResponse](c, v, req)
			what := fmt.Sprintf("v%d name %q version %q", v, tc.name, tc.version)
			if tc.ok {
				wantCode(t, what, resp.ErrorCode, nil)
				if len(resp.ApiKeys) == 0 {
					t.Errorf("%s: no keys", what)
				}
			} else {
				wantCode(t, what, resp.ErrorCode, kerr.InvalidRequest)
			}
		}
	}
	// Before v3 the fields do not exist: nothing to validate.
	for v := int16(0); v < 3; v++ {
		wantCode(t, fmt.Sprintf("v%d", v), roundTrip[*kmsg.ApiVersionsResponse](c, v, kmsg.NewPtrApiVersionsRequest()).ErrorCode, nil)
	}
}

// ---- Version sweep ----

// sweepCase builds a minimal valid request for one key at version v and
// returns it with a check of the response.
type sweepCase func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response))

// TestVersionSweep sends a minimal valid request at every (key, version)
// the server advertises and checks that the response decodes at that
// version, to the whole body, with the expected outcome. A key the server
// advertises without a case here fails the test.
func TestVersionSweep(t *testing.T) {
	addr := startNode(t, true)
	setup := dial(t, addr)
	const topic = "sweep"
	topicID := createTopic(setup, topic, 1, nil)
	mustProduce(setup, topic, 0, plain(2, 16).encode())

	cases := map[int16]sweepCase{
		kmsg.Produce.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := produceReq(topic, topicID, 0, -1, plain(1, 16).encode())
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.ProduceResponse)
				st := resp.Topics[0]
				if v >= 13 && st.TopicID != topicID || v < 13 && st.Topic != topic {
					t.Errorf("response names topic %q / %x", st.Topic, st.TopicID)
				}
				sp := st.Partitions[0]
				wantCode(t, "produce", sp.ErrorCode, nil)
				if sp.BaseOffset < 2 {
					t.Errorf("base offset %d, want ≥ 2", sp.BaseOffset)
				}
			}
		},
		kmsg.Fetch.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := fetchReq(topic, topicID, 0, 0, 5000, 1)
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.FetchResponse)
				wantCode(t, "fetch", resp.ErrorCode, nil)
				if v >= 7 && resp.SessionID != 0 {
					t.Errorf("session id %d: Cohort creates no fetch sessions", resp.SessionID)
				}
				st := resp.Topics[0]
				if v >= 13 && st.TopicID != topicID || v < 13 && st.Topic != topic {
					t.Errorf("response names topic %q / %x", st.Topic, st.TopicID)
				}
				sp := st.Partitions[0]
				wantCode(t, "fetch partition", sp.ErrorCode, nil)
				if sp.HighWatermark < 2 || sp.LogStartOffset != 0 && v >= 5 {
					t.Errorf("high watermark %d, log start %d", sp.HighWatermark, sp.LogStartOffset)
				}
				if bs := parseBatches(t, sp.RecordBatches); len(bs) == 0 || bs[0].FirstOffset != 0 || len(bs[0].Records) != 2 {
					t.Errorf("fetched %d batches, want the first to hold offsets 0-1", len(bs))
				}
			}
		},
		kmsg.ListOffsets.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrListOffsetsRequest()
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = -2
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return req, func(r kmsg.Response) {
				sp := r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
				wantCode(t, "list offsets", sp.ErrorCode, nil)
				if sp.Offset != 0 {
					t.Errorf("earliest offset %d, want 0", sp.Offset)
				}
			}
		},
		kmsg.Metadata.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.MetadataResponse)
				if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 0 || resp.Brokers[0].Port == 0 {
					t.Errorf("brokers %+v", resp.Brokers)
				}
				if v >= 2 && (resp.ClusterID == nil || *resp.ClusterID == "") {
					t.Errorf("no cluster id")
				}
				if len(resp.Topics) != 1 {
					t.Fatalf("%d topics, want 1", len(resp.Topics))
				}
				st := resp.Topics[0]
				wantCode(t, "metadata", st.ErrorCode, nil)
				if st.Topic == nil || *st.Topic != topic || len(st.Partitions) != 1 || st.Partitions[0].Leader != 0 {
					t.Errorf("topic %+v", st)
				}
				if v >= 10 && st.TopicID != topicID {
					t.Errorf("topic id %x, want %x", st.TopicID, topicID)
				}
			}
		},
		kmsg.ApiVersions.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "sweep", "1"
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.ApiVersionsResponse)
				wantCode(t, "api versions", resp.ErrorCode, nil)
				if len(resp.ApiKeys) == 0 {
					t.Errorf("no keys")
				}
			}
		},
		kmsg.CreateTopics.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			name := fmt.Sprintf("sweep-create-v%d", v)
			req, _ := createReq(name, 2, 1)
			return req, func(r kmsg.Response) {
				st := r.(*kmsg.CreateTopicsResponse).Topics[0]
				wantCode(t, "create topics", st.ErrorCode, nil)
				if v >= 5 && (st.NumPartitions != 2 || st.ReplicationFactor != 1 || len(st.Configs) == 0) {
					t.Errorf("created %+v", st)
				}
				if v >= 7 && st.TopicID == [16]byte{} {
					t.Errorf("no topic id")
				}
				if got := len(metadataTopic(c, name).Partitions); got != 2 {
					t.Errorf("metadata shows %d partitions, want 2", got)
				}
			}
		},
		kmsg.DeleteTopics.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			name := fmt.Sprintf("sweep-delete-v%d", v)
			id := createTopic(c, name, 1, nil)
			req := kmsg.NewPtrDeleteTopicsRequest()
			if v >= 6 {
				rt := kmsg.NewDeleteTopicsRequestTopic()
				rt.TopicID = id
				req.Topics = append(req.Topics, rt)
			} else {
				req.TopicNames = []string{name}
			}
			return req, func(r kmsg.Response) {
				st := r.(*kmsg.DeleteTopicsResponse).Topics[0]
				wantCode(t, "delete topics", st.ErrorCode, nil)
				if st.Topic == nil || *st.Topic != name {
					t.Errorf("response names topic %v, want %s", st.Topic, name)
				}
				if exists(c, name) {
					t.Errorf("topic still exists")
				}
			}
		},
		kmsg.InitProducerID.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionTimeoutMillis = 60000
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.InitProducerIDResponse)
				wantCode(t, "init producer id", resp.ErrorCode, nil)
				if resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
					t.Errorf("producer id %d epoch %d", resp.ProducerID, resp.ProducerEpoch)
				}
			}
		},
		kmsg.OffsetForLeaderEpoch.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = topic
			for _, e := range []int32{0, 1} {
				rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
				rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, e
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			return req, func(r kmsg.Response) {
				ps := r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions
				wantCode(t, "offset for epoch 0", ps[0].ErrorCode, nil)
				if ps[0].EndOffset < 2 || v >= 1 && ps[0].LeaderEpoch != 0 {
					t.Errorf("epoch 0: end %d, epoch %d", ps[0].EndOffset, ps[0].LeaderEpoch)
				}
				if ps[1].EndOffset != -1 || v >= 1 && ps[1].LeaderEpoch != -1 {
					t.Errorf("epoch 1: end %d, epoch %d, want undefined", ps[1].EndOffset, ps[1].LeaderEpoch)
				}
			}
		},
		kmsg.DescribeLogDirs.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrDescribeLogDirsRequest()
			rt := kmsg.NewDescribeLogDirsRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{0}
			req.Topics = append(req.Topics, rt)
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.DescribeLogDirsResponse)
				wantCode(t, "describe log dirs", resp.ErrorCode, nil)
				if len(resp.Dirs) != 1 || len(resp.Dirs[0].Topics) != 1 || resp.Dirs[0].Topics[0].Topic != topic ||
					len(resp.Dirs[0].Topics[0].Partitions) != 1 || resp.Dirs[0].Topics[0].Partitions[0].Size <= 0 {
					t.Errorf("dirs %+v", resp.Dirs)
				}
				if v >= 4 && (resp.Dirs[0].TotalBytes <= 0 || resp.Dirs[0].UsableBytes <= 0) {
					t.Errorf("total %d, usable %d bytes", resp.Dirs[0].TotalBytes, resp.Dirs[0].UsableBytes)
				}
			}
		},
		kmsg.DeleteRecords.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			// Offset 0: the log start already, so the other cases still
			// read from it.
			req := kmsg.NewPtrDeleteRecordsRequest()
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return req, func(r kmsg.Response) {
				sp := r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
				wantCode(t, "delete records", sp.ErrorCode, nil)
				if sp.LowWatermark != 0 {
					t.Errorf("low watermark %d, want 0", sp.LowWatermark)
				}
			}
		},
		kmsg.AlterConfigs.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrAlterConfigsRequest()
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
			cfg := kmsg.NewAlterConfigsRequestResourceConfig()
			cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr(strconv.Itoa(1000+int(v)))
			rr.Configs = append(rr.Configs, cfg)
			req.Resources = append(req.Resources, rr)
			return req, func(r kmsg.Response) {
				sr := r.(*kmsg.AlterConfigsResponse).Resources[0]
				wantCode(t, "alter configs", sr.ErrorCode, nil)
				if sr.ResourceName != topic || sr.ResourceType != kmsg.ConfigResourceTypeTopic {
					t.Errorf("resource %v %q", sr.ResourceType, sr.ResourceName)
				}
			}
		},
		kmsg.IncrementalAlterConfigs.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
			cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cfg.Name, cfg.Op, cfg.Value = "segment.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(strconv.Itoa(60000+int(v)))
			rr.Configs = append(rr.Configs, cfg)
			req.Resources = append(req.Resources, rr)
			return req, func(r kmsg.Response) {
				sr := r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
				wantCode(t, "incremental alter configs", sr.ErrorCode, nil)
			}
		},
		kmsg.DescribeConfigs.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrDescribeConfigsRequest()
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
			req.Resources = append(req.Resources, rr)
			req.IncludeSynonyms, req.IncludeDocumentation = true, true
			return req, func(r kmsg.Response) {
				sr := r.(*kmsg.DescribeConfigsResponse).Resources[0]
				wantCode(t, "describe configs", sr.ErrorCode, nil)
				found := false
				for _, c := range sr.Configs {
					if c.Name == "retention.ms" && c.Value != nil && *c.Value == "604800000" {
						found = true
					}
				}
				if !found {
					t.Errorf("retention.ms missing from %d configs", len(sr.Configs))
				}
			}
		},
		kmsg.CreatePartitions.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			name := fmt.Sprintf("sweep-grow-v%d", v)
			createTopic(c, name, 1, nil)
			req := kmsg.NewPtrCreatePartitionsRequest()
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = name, 2
			req.Topics = append(req.Topics, rt)
			return req, func(r kmsg.Response) {
				wantCode(t, "create partitions", r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, nil)
				if got := len(metadataTopic(c, name).Partitions); got != 2 {
					t.Errorf("metadata shows %d partitions, want 2", got)
				}
			}
		},
		kmsg.FindCoordinator.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey, req.CoordinatorKeys = "sweep-group", []string{"sweep-group"}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.FindCoordinatorResponse)
				node, host, port, code := resp.NodeID, resp.Host, resp.Port, resp.ErrorCode
				if v >= 4 {
					if len(resp.Coordinators) != 1 {
						t.Fatalf("%d coordinators for one key", len(resp.Coordinators))
					}
					co := resp.Coordinators[0]
					node, host, port, code = co.NodeID, co.Host, co.Port, co.ErrorCode
				}
				wantCode(t, "find coordinator", code, nil)
				if node != 0 || fmt.Sprintf("%s:%d", host, port) != addr {
					t.Errorf("coordinator %d at %s:%d, want 0 at %s", node, host, port, addr)
				}
			}
		},
		// A PLAINTEXT listener answers the SASL APIs ILLEGAL_SASL_STATE,
		// as Kafka's KafkaApis (sasl_test.go runs them on SASL listeners).
		kmsg.SASLHandshake.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrSASLHandshakeRequest()
			req.Mechanism = "PLAIN"
			return req, func(r kmsg.Response) {
				wantCode(t, "sasl handshake", r.(*kmsg.SASLHandshakeResponse).ErrorCode, kerr.IllegalSaslState)
			}
		},
		kmsg.SASLAuthenticate.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			return kmsg.NewPtrSASLAuthenticateRequest(), func(r kmsg.Response) {
				wantCode(t, "sasl authenticate", r.(*kmsg.SASLAuthenticateResponse).ErrorCode, kerr.IllegalSaslState)
			}
		},
		kmsg.DescribeUserSCRAMCredentials.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "nobody"}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.DescribeUserSCRAMCredentialsResponse)
				if len(resp.Results) != 1 {
					t.Fatalf("%d results for one user", len(resp.Results))
				}
				wantCode(t, "describe scram", resp.Results[0].ErrorCode, kerr.ResourceNotFound)
			}
		},
		kmsg.AlterUserSCRAMCredentials.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "nobody", Mechanism: 2}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.AlterUserSCRAMCredentialsResponse)
				if len(resp.Results) != 1 {
					t.Fatalf("%d results for one user", len(resp.Results))
				}
				wantCode(t, "alter scram", resp.Results[0].ErrorCode, kerr.ResourceNotFound)
			}
		},
		// Without an authorizer, as Kafka: SECURITY_DISABLED.
		kmsg.DescribeClientQuotas.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrDescribeClientQuotasRequest()
			org := "sweep"
			req.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "org", MatchType: kmsg.QuotasMatchTypeExact, Match: &org}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.DescribeClientQuotasResponse)
				wantCode(t, "describe client quotas", resp.ErrorCode, nil)
				for _, e := range resp.Entries {
					if len(e.Entity) != 1 || e.Entity[0].Type != "org" || e.Entity[0].Name == nil || *e.Entity[0].Name != org {
						t.Errorf("entry of another entity: %+v", e.Entity)
					}
				}
			}
		},
		kmsg.AlterClientQuotas.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrAlterClientQuotasRequest()
			org := "sweep"
			req.Entries = []kmsg.AlterClientQuotasRequestEntry{{
				Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "org", Name: &org}},
				Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: "request_rate", Value: float64(1000 + v)}},
			}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.AlterClientQuotasResponse)
				if len(resp.Entries) != 1 {
					t.Fatalf("%d entries for one", len(resp.Entries))
				}
				wantCode(t, "alter client quotas", resp.Entries[0].ErrorCode, nil)
				if e := resp.Entries[0].Entity; len(e) != 1 || e[0].Name == nil || *e[0].Name != org {
					t.Errorf("entity not echoed: %+v", e)
				}
			}
		},
		kmsg.DescribeACLs.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.Operation, req.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return req, func(r kmsg.Response) {
				wantCode(t, "describe acls", r.(*kmsg.DescribeACLsResponse).ErrorCode, kerr.SecurityDisabled)
			}
		},
		kmsg.CreateACLs.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrCreateACLsRequest()
			req.Creations = []kmsg.CreateACLsRequestCreation{kmsg.NewCreateACLsRequestCreation()}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.CreateACLsResponse)
				if len(resp.Results) != 1 {
					t.Fatalf("%d results for one creation", len(resp.Results))
				}
				wantCode(t, "create acls", resp.Results[0].ErrorCode, kerr.SecurityDisabled)
			}
		},
		kmsg.DeleteACLs.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrDeleteACLsRequest()
			req.Filters = []kmsg.DeleteACLsRequestFilter{kmsg.NewDeleteACLsRequestFilter()}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.DeleteACLsResponse)
				if len(resp.Results) != 1 {
					t.Fatalf("%d results for one filter", len(resp.Results))
				}
				wantCode(t, "delete acls", resp.Results[0].ErrorCode, kerr.SecurityDisabled)
			}
		},
		kmsg.DescribeCluster.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			return kmsg.NewPtrDescribeClusterRequest(), func(r kmsg.Response) {
				resp := r.(*kmsg.DescribeClusterResponse)
				wantCode(t, "describe cluster", resp.ErrorCode, nil)
				if resp.ClusterID == "" || len(resp.Brokers) != 1 || resp.ControllerID != 0 {
					t.Errorf("cluster %+v", resp)
				}
			}
		},
		kmsg.DescribeTopicPartitions.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrDescribeTopicPartitionsRequest()
			req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: topic}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.DescribeTopicPartitionsResponse)
				if len(resp.Topics) != 1 || resp.NextCursor != nil {
					t.Fatalf("topics %+v, next cursor %+v", resp.Topics, resp.NextCursor)
				}
				st := resp.Topics[0]
				wantCode(t, "describe topic partitions", st.ErrorCode, nil)
				if st.TopicID != topicID || len(st.Partitions) != 1 || st.Partitions[0].LeaderID != 0 {
					t.Errorf("topic %+v", st)
				}
			}
		},
	}

	for k, c := range txnSweepCases(topic, topicID) {
		cases[k] = c
	}
	for k, c := range groupSweepCases(topic, topicID) {
		cases[k] = c
	}
	for k, c := range shareFetchSweepCases(topic, topicID) {
		cases[k] = c
	}
	for k, c := range shareOffsetsSweepCases(topic, topicID) {
		cases[k] = c
	}
	av := roundTrip[*kmsg.ApiVersionsResponse](setup, 0, kmsg.NewPtrApiVersionsRequest())
	if len(av.ApiKeys) == 0 {
		t.Fatal("no keys advertised")
	}
	for _, k := range av.ApiKeys {
		build, ok := cases[k.ApiKey]
		if !ok {
			t.Errorf("key %d (%s) is advertised but has no sweep case", k.ApiKey, kmsg.NameForKey(k.ApiKey))
			continue
		}
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			t.Run(fmt.Sprintf("%s/v%d", kmsg.NameForKey(k.ApiKey), v), func(t *testing.T) {
				c := dial(t, addr)
				req, check := build(t, c, v)
				req.SetVersion(v)
				check(c.do(req))
			})
		}
	}
}

// ---- CreateTopics ----

func TestCreateTopics(t *testing.T) {
	addr := startNode(t, false)
	c := dial(t, addr)
	createTopic(c, "exists", 1, nil)

	type mod func(*kmsg.CreateTopicsRequestTopic)
	assign := func(parts ...[]int32) mod {
		return func(rt *kmsg.CreateTopicsRequestTopic) {
			for i, r := range parts {
				a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
				a.Partition, a.Replicas = int32(i), r
				rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
			}
		}
	}
	config := func(name string, value *string) mod {
		return func(rt *kmsg.CreateTopicsRequestTopic) {
			cfg := kmsg.NewCreateTopicsRequestTopicConfig()
			cfg.Name, cfg.Value = name, value
			rt.Configs = append(rt.Configs, cfg)
		}
	}
	long := strings.Repeat("x", 250)
	cases := []struct {
		what       string
		topic      string
		partitions int32
		rf         int16
		mod        mod
		want       *kerr.Error
	}{
		{"exists", "exists", 1, 1, nil, kerr.TopicAlreadyExists},
		{"zero partitions", "p0", 0, 1, nil, kerr.InvalidPartitions},
		{"-2 partitions", "pm2", -2, 1, nil, kerr.InvalidPartitions},
		{"replication factor 3", "rf3", 1, 3, nil, kerr.InvalidReplicationFactor},
		{"replication factor 0", "rf0", 1, 0, nil, kerr.InvalidReplicationFactor},
		{"replication factor -2", "rfm2", 1, -2, nil, kerr.InvalidReplicationFactor},
		{"name .", ".", 1, 1, nil, kerr.InvalidTopicException},
		{"name ..", "..", 1, 1, nil, kerr.InvalidTopicException},
		{"name of 250 characters", long, 1, 1, nil, kerr.InvalidTopicException},
		{"name with /", "a/b", 1, 1, nil, kerr.InvalidTopicException},
		{"empty name", "", 1, 1, nil, kerr.InvalidTopicException},
		{"partitions and an assignment", "both", 1, -1, assign([]int32{0}), kerr.InvalidRequest},
		{"replication factor and an assignment", "both-rf", -1, 1, assign([]int32{0}), kerr.InvalidRequest},
		{"assignment to another broker", "ra1", -1, -1, assign([]int32{1}), kerr.InvalidReplicaAssignment},
		{"assignment with two replicas", "ra2", -1, -1, assign([]int32{0, 0}), kerr.InvalidReplicaAssignment},
		{"unknown config", "cfg-unknown", 1, 1, config("no.such.config", kmsg.StringPtr("1")), kerr.InvalidConfig},
		{"malformed config", "cfg-bad", 1, 1, config("retention.ms", kmsg.StringPtr("soon")), kerr.InvalidConfig},
		{"null config", "cfg-null", 1, 1, config("retention.ms", nil), kerr.InvalidConfig},
		{"too small segment.bytes", "cfg-small", 1, 1, config("segment.bytes", kmsg.StringPtr("1")), kerr.InvalidConfig},
		{"unknown compression.type", "cfg-brotli", 1, 1, config("compression.type", kmsg.StringPtr("brotli")), kerr.InvalidConfig},
		{"retention.ms below -1", "cfg-retention", 1, 1, config("retention.ms", kmsg.StringPtr("-2")), kerr.InvalidConfig},
	}
	for _, tc := range cases {
		req, rt := createReq(tc.topic, tc.partitions, tc.rf)
		if tc.mod != nil {
			tc.mod(rt)
		}
		for _, validateOnly := range []bool{false, true} {
			req.ValidateOnly = validateOnly
			resp := roundTrip[*kmsg.CreateTopicsResponse](c, 7, req)
			what := fmt.Sprintf("%s (validate only %v)", tc.what, validateOnly)
			if len(resp.Topics) != 1 {
				t.Fatalf("%s: %d topics in the response", what, len(resp.Topics))
			}
			st := resp.Topics[0]
			wantCode(t, what, st.ErrorCode, tc.want)
			if st.ErrorMessage == nil || *st.ErrorMessage == "" {
				t.Errorf("%s: no error message", what)
			}
			if st.Topic != tc.topic || st.TopicID != [16]byte{} || st.NumPartitions != -1 || st.ReplicationFactor != -1 {
				t.Errorf("%s: failed topic reported as %q id %x partitions %d rf %d", what, st.Topic, st.TopicID, st.NumPartitions, st.ReplicationFactor)
			}
		}
		if tc.topic != "exists" && tc.want != kerr.InvalidTopicException && exists(c, tc.topic) {
			t.Errorf("%s: topic %q was created", tc.what, tc.topic)
		}
	}

	t.Run("assignment with a gap", func(t *testing.T) {
		c := dial(t, addr)
		req, rt := createReq("gap", -1, -1)
		for _, p := range []int32{0, 2} {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = p, []int32{0}
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
		wantCode(t, "gap", roundTrip[*kmsg.CreateTopicsResponse](c, 7, req).Topics[0].ErrorCode, kerr.InvalidReplicaAssignment)
		if exists(c, "gap") {
			t.Error("created")
		}
	})

	t.Run("by assignment", func(t *testing.T) {
		c := dial(t, addr)
		req, rt := createReq("assigned", -1, -1)
		assign([]int32{0}, []int32{0}, []int32{0})(rt)
		st := roundTrip[*kmsg.CreateTopicsResponse](c, 7, req).Topics[0]
		wantCode(t, "assigned", st.ErrorCode, nil)
		if st.NumPartitions != 3 || st.ReplicationFactor != 1 {
			t.Errorf("created with %d partitions, rf %d; want 3, 1", st.NumPartitions, st.ReplicationFactor)
		}
		if got := len(metadataTopic(c, "assigned").Partitions); got != 3 {
			t.Errorf("metadata: %d partitions", got)
		}
	})

	t.Run("defaults", func(t *testing.T) {
		// v4+ (KIP-464): -1 means the broker's default partitions and
		// replication factor; the v5+ response says what was chosen.
		c := dial(t, addr)
		req, _ := createReq("defaults", -1, -1)
		st := roundTrip[*kmsg.CreateTopicsResponse](c, 7, req).Topics[0]
		wantCode(t, "defaults", st.ErrorCode, nil)
		if st.NumPartitions != 1 || st.ReplicationFactor != 1 {
			t.Errorf("created with %d partitions, rf %d; want 1, 1", st.NumPartitions, st.ReplicationFactor)
		}
	})

	t.Run("249 characters", func(t *testing.T) {
		c := dial(t, addr)
		name := strings.Repeat("y", 249)
		createTopic(c, name, 1, nil)
		mustProduce(c, name, 0, plain(1, 1).encode())
	})

	t.Run("configs", func(t *testing.T) {
		c := dial(t, addr)
		req, rt := createReq("configured", 1, 1)
		config("retention.ms", kmsg.StringPtr("1234"))(rt)
		st := roundTrip[*kmsg.CreateTopicsResponse](c, 7, req).Topics[0]
		wantCode(t, "configured", st.ErrorCode, nil)
		var got []string
		for _, c := range st.Configs {
			if c.Name == "retention.ms" || c.Name == "cleanup.policy" {
				got = append(got, fmt.Sprintf("%s=%s source %d", c.Name, *c.Value, c.Source))
			}
		}
		slices.Sort(got)
		want := []string{"cleanup.policy=delete source 5", "retention.ms=1234 source 1"}
		if !slices.Equal(got, want) {
			t.Errorf("configs in the response %v, want %v", got, want)
		}
	})

	t.Run("duplicate name", func(t *testing.T) {
		c := dial(t, addr)
		req, _ := createReq("dup", 1, 1)
		req.Topics = append(req.Topics, req.Topics[0])
		ok, _ := createReq("dup-sibling", 1, 1)
		req.Topics = append(req.Topics, ok.Topics[0])
		resp := roundTrip[*kmsg.CreateTopicsResponse](c, 7, req)
		if len(resp.Topics) != 3 {
			t.Fatalf("%d topics in the response, want 3", len(resp.Topics))
		}
		for _, st := range resp.Topics {
			if st.Topic == "dup" {
				wantCode(t, "duplicate", st.ErrorCode, kerr.InvalidRequest)
			} else {
				wantCode(t, st.Topic, st.ErrorCode, nil)
			}
		}
		if exists(c, "dup") || !exists(c, "dup-sibling") {
			t.Errorf("after the request: dup exists %v, dup-sibling exists %v; want false, true", exists(c, "dup"), exists(c, "dup-sibling"))
		}
	})

	t.Run("validate only", func(t *testing.T) {
		c := dial(t, addr)
		req, _ := createReq("validated", 3, 1)
		req.ValidateOnly = true
		for range 2 {
			st := roundTrip[*kmsg.CreateTopicsResponse](c, 7, req).Topics[0]
			wantCode(t, "validate only", st.ErrorCode, nil)
			if st.TopicID != [16]byte{} || st.NumPartitions != 3 {
				t.Errorf("validate only answered id %x, %d partitions", st.TopicID, st.NumPartitions)
			}
		}
		if exists(c, "validated") {
			t.Fatal("validate-only created the topic")
		}
		all := roundTrip[*kmsg.MetadataResponse](c, 12, kmsg.NewPtrMetadataRequest())
		for _, st := range all.Topics {
			if *st.Topic == "validated" {
				t.Fatal("validate-only topic is listed")
			}
		}
		req.ValidateOnly = false
		wantCode(t, "real create", roundTrip[*kmsg.CreateTopicsResponse](c, 7, req).Topics[0].ErrorCode, nil)
	})
}

// ---- DeleteTopics ----

func TestDeleteTopics(t *testing.T) {
	addr := startNode(t, false)
	del := func(c *rawClient, v int16, name *string, id [16]byte) kmsg.DeleteTopicsResponseTopic {
		c.t.Helper()
		req := kmsg.NewPtrDeleteTopicsRequest()
		if v >= 6 {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic, rt.TopicID = name, id
			req.Topics = append(req.Topics, rt)
		} else {
			req.TopicNames = []string{*name}
		}
		resp := roundTrip[*kmsg.DeleteTopicsResponse](c, v, req)
		if len(resp.Topics) != 1 {
			c.t.Fatalf("%d topics in the response", len(resp.Topics))
		}
		return resp.Topics[0]
	}

	t.Run("by name", func(t *testing.T) {
		c := dial(t, addr)
		for _, v := range []int16{5, 6} {
			name := fmt.Sprintf("by-name-v%d", v)
			id := createTopic(c, name, 2, nil)
			st := del(c, v, kmsg.StringPtr(name), [16]byte{})
			wantCode(t, name, st.ErrorCode, nil)
			if v >= 6 && st.TopicID != id {
				t.Errorf("%s: response id %x, want %x", name, st.TopicID, id)
			}
			wantCode(t, name+" after delete", metadataTopic(c, name).ErrorCode, kerr.UnknownTopicOrPartition)
		}
	})
	t.Run("by id", func(t *testing.T) {
		c := dial(t, addr)
		id := createTopic(c, "by-id", 1, nil)
		st := del(c, 6, nil, id)
		wantCode(t, "by id", st.ErrorCode, nil)
		if st.Topic == nil || *st.Topic != "by-id" {
			t.Errorf("response names %v, want by-id", st.Topic)
		}
		if exists(c, "by-id") {
			t.Error("still exists")
		}
	})
	t.Run("unknown name", func(t *testing.T) {
		c := dial(t, addr)
		for _, v := range []int16{0, 5, 6} {
			wantCode(t, fmt.Sprintf("v%d", v), del(c, v, kmsg.StringPtr("nope"), [16]byte{}).ErrorCode, kerr.UnknownTopicOrPartition)
		}
	})
	t.Run("unknown id", func(t *testing.T) {
		c := dial(t, addr)
		wantCode(t, "unknown id", del(c, 6, nil, [16]byte{1, 2, 3}).ErrorCode, kerr.UnknownTopicID)
	})
	t.Run("name and id", func(t *testing.T) {
		c := dial(t, addr)
		id := createTopic(c, "both", 1, nil)
		wantCode(t, "name and id", del(c, 6, kmsg.StringPtr("both"), id).ErrorCode, kerr.InvalidRequest)
		if !exists(c, "both") {
			t.Error("topic was deleted")
		}
	})
	t.Run("re-create", func(t *testing.T) {
		// A topic deleted and created again under its name is a new topic:
		// new id, empty log.
		c := dial(t, addr)
		old := createTopic(c, "again", 1, nil)
		mustProduce(c, "again", 0, plain(3, 10).encode())
		wantCode(t, "delete", del(c, 6, kmsg.StringPtr("again"), [16]byte{}).ErrorCode, nil)
		if id := createTopic(c, "again", 1, nil); id == old {
			t.Error("re-created topic has the old id")
		}
		if hw := highWatermark(c, "again", 0); hw != 0 {
			t.Errorf("re-created topic has high watermark %d, want 0", hw)
		}
		sp := fetchPartition(c, 12, fetchReq("again", [16]byte{}, 0, 0, 0, 0))
		if len(sp.RecordBatches) != 0 {
			t.Errorf("re-created topic returned %d bytes of old data", len(sp.RecordBatches))
		}
	})
}

// ---- CreatePartitions ----

func TestCreatePartitions(t *testing.T) {
	addr := startNode(t, false)
	c := dial(t, addr)
	createTopic(c, "grow", 1, nil)
	grow := func(v int16, validateOnly bool, topics ...kmsg.CreatePartitionsRequestTopic) []kmsg.CreatePartitionsResponseTopic {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Topics, req.ValidateOnly = topics, validateOnly
		return roundTrip[*kmsg.CreatePartitionsResponse](c, v, req).Topics
	}
	topic := func(name string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		for _, r := range assignment {
			rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: r})
		}
		return rt
	}
	partitions := func() int { return len(metadataTopic(c, "grow").Partitions) }

	wantCode(t, "grow to 3", grow(3, false, topic("grow", 3))[0].ErrorCode, nil)
	if n := partitions(); n != 3 {
		t.Fatalf("%d partitions after growing to 3", n)
	}
	mustProduce(c, "grow", 2, plain(1, 1).encode())

	for _, count := range []int32{3, 2, 0, -1} {
		st := grow(3, false, topic("grow", count))[0]
		wantCode(t, fmt.Sprintf("count %d", count), st.ErrorCode, kerr.InvalidPartitions)
		if st.ErrorMessage == nil {
			t.Errorf("count %d: no error message", count)
		}
	}
	wantCode(t, "unknown topic", grow(3, false, topic("nope", 2))[0].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "validate only", grow(3, true, topic("grow", 5))[0].ErrorCode, nil)
	if n := partitions(); n != 3 {
		t.Fatalf("validate-only changed the count to %d", n)
	}
	wantCode(t, "too few assignments", grow(3, false, topic("grow", 5, []int32{0}))[0].ErrorCode, kerr.InvalidReplicaAssignment)
	wantCode(t, "assignment to broker 1", grow(3, false, topic("grow", 4, []int32{1}))[0].ErrorCode, kerr.InvalidReplicaAssignment)
	for _, st := range grow(3, false, topic("grow", 6), topic("grow", 7)) {
		wantCode(t, "duplicate topic", st.ErrorCode, kerr.InvalidRequest)
	}
	if n := partitions(); n != 3 {
		t.Fatalf("failed requests changed the count to %d", n)
	}
	wantCode(t, "assigned", grow(0, false, topic("grow", 4, []int32{0}))[0].ErrorCode, nil)
	if n := partitions(); n != 4 {
		t.Fatalf("%d partitions after growing to 4", n)
	}
}

// ---- Metadata ----

func TestMetadataAutoCreate(t *testing.T) {
	meta := func(c *rawClient, v int16, allow bool, names ...string) []kmsg.MetadataResponseTopic {
		c.t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = allow
		for _, n := range names {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, rt)
		}
		return roundTrip[*kmsg.MetadataResponse](c, v, req).Topics
	}

	t.Run("on", func(t *testing.T) {
		c := dial(t, startNode(t, true))
		st := meta(c, 12, true, "auto")[0]
		wantCode(t, "v12 allow", st.ErrorCode, nil)
		if len(st.Partitions) != 1 || st.TopicID == [16]byte{} || st.Partitions[0].Leader != 0 {
			t.Errorf("auto-created topic %+v", st)
		}
		if again := meta(c, 12, true, "auto")[0]; again.TopicID != st.TopicID {
			t.Errorf("second metadata gives id %x, first %x", again.TopicID, st.TopicID)
		}
		// v4+ AllowAutoTopicCreation=false wins over the broker setting.
		for _, v := range []int16{4, 9, 13} {
			name := fmt.Sprintf("not-allowed-v%d", v)
			wantCode(t, name, meta(c, v, false, name)[0].ErrorCode, kerr.UnknownTopicOrPartition)
			if exists(c, name) {
				t.Errorf("%s was created", name)
			}
		}
		// Before v4 a metadata request always allows auto-creation.
		for _, v := range []int16{0, 1, 3} {
			name := fmt.Sprintf("implicit-v%d", v)
			wantCode(t, name, meta(c, v, false, name)[0].ErrorCode, nil)
			if !exists(c, name) {
				t.Errorf("%s was not created", name)
			}
		}
		for _, name := range []string{"a/b", "..", ".", strings.Repeat("z", 250)} {
			st := meta(c, 12, true, name)[0]
			wantCode(t, fmt.Sprintf("invalid name %.20q", name), st.ErrorCode, kerr.InvalidTopicException)
			if st.Topic == nil || *st.Topic != name {
				t.Errorf("invalid name %.20q: answered for %v", name, st.Topic)
			}
		}
	})

	t.Run("off", func(t *testing.T) {
		c := dial(t, startNode(t, false))
		for _, v := range []int16{1, 4, 12, 13} {
			name := fmt.Sprintf("off-v%d", v)
			wantCode(t, name, meta(c, v, true, name)[0].ErrorCode, kerr.UnknownTopicOrPartition)
		}
		wantCode(t, "invalid name", meta(c, 12, true, "a/b")[0].ErrorCode, kerr.InvalidTopicException)
		if ts := roundTrip[*kmsg.MetadataResponse](c, 12, kmsg.NewPtrMetadataRequest()).Topics; len(ts) != 1 || *ts[0].Topic != "__consumer_offsets" {
			t.Errorf("%d topics exist, want only the internal __consumer_offsets", len(ts))
		}
	})
}

func TestMetadataListsAndIDs(t *testing.T) {
	addr := startNode(t, false)
	c := dial(t, addr)
	id := createTopic(c, "m1", 2, nil)
	createTopic(c, "m2", 1, nil)
	names := func(ts []kmsg.MetadataResponseTopic) []string {
		var out []string
		for _, st := range ts {
			out = append(out, *st.Topic)
		}
		return out
	}
	// Every topic includes the internal one, as Kafka lists it.
	all := []string{"m1", "m2", "__consumer_offsets"}

	v0 := kmsg.NewPtrMetadataRequest()
	v0.Topics = []kmsg.MetadataRequestTopic{}
	if got := names(roundTrip[*kmsg.MetadataResponse](c, 0, v0).Topics); !slices.Equal(got, all) {
		t.Errorf("v0 empty list: %v, want every topic %v", got, all)
	}
	if got := names(roundTrip[*kmsg.MetadataResponse](c, 1, v0).Topics); len(got) != 0 {
		t.Errorf("v1 empty list: %v, want none", got)
	}
	if got := names(roundTrip[*kmsg.MetadataResponse](c, 1, kmsg.NewPtrMetadataRequest()).Topics); !slices.Equal(got, all) {
		t.Errorf("v1 null list: %v, want every topic %v", got, all)
	}

	byID := func(id [16]byte) kmsg.MetadataResponseTopic {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = id
		req.Topics = append(req.Topics, rt)
		return roundTrip[*kmsg.MetadataResponse](c, 12, req).Topics[0]
	}
	st := byID(id)
	wantCode(t, "by id", st.ErrorCode, nil)
	if st.Topic == nil || *st.Topic != "m1" || len(st.Partitions) != 2 {
		t.Errorf("by id: %+v", st)
	}
	st = byID([16]byte{9})
	wantCode(t, "unknown id", st.ErrorCode, kerr.UnknownTopicID)
	if st.TopicID != [16]byte{9} {
		t.Errorf("unknown id answered for %x", st.TopicID)
	}
	wantCode(t, "no name, no id", byID([16]byte{}).ErrorCode, kerr.InvalidRequest)

	req := kmsg.NewPtrMetadataRequest()
	req.IncludeTopicAuthorizedOperations, req.IncludeClusterAuthorizedOperations = true, true
	resp := roundTrip[*kmsg.MetadataResponse](c, 10, req)
	if resp.AuthorizedOperations == -2147483648 || resp.Topics[0].AuthorizedOperations == -2147483648 {
		t.Errorf("authorized operations asked for but not given: cluster %d topic %d", resp.AuthorizedOperations, resp.Topics[0].AuthorizedOperations)
	}
}

// TestRestart: topic ids, cluster id, data and idempotent producer state
// survive a restart on the same data dir, and producer ids are never
// handed out twice.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	var running *node.Node
	start := func() *rawClient {
		n, err := node.Start(node.Config{KafkaListen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0", DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		running = n
		return dial(t, n.KafkaAddr())
	}
	stop := func() {
		n := running
		running = nil
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}
	t.Cleanup(func() {
		if running != nil {
			stop()
		}
	})

	c := start()
	id := createTopic(c, "keep", 3, map[string]string{"retention.ms": "5000"})
	clusterID := *roundTrip[*kmsg.MetadataResponse](c, 12, kmsg.NewPtrMetadataRequest()).ClusterID
	pid := initProducerID(c)
	first := idempotent(pid, 0, 0, 2).encode()
	if off := mustProduce(c, "keep", 1, bytes.Clone(first)); off != 0 {
		t.Fatalf("first produce at %d", off)
	}
	stop()

	c = start()
	st := metadataTopic(c, "keep")
	wantCode(t, "after restart", st.ErrorCode, nil)
	if st.TopicID != id || len(st.Partitions) != 3 {
		t.Errorf("after restart: id %x with %d partitions, want %x with 3", st.TopicID, len(st.Partitions), id)
	}
	if got := *roundTrip[*kmsg.MetadataResponse](c, 12, kmsg.NewPtrMetadataRequest()).ClusterID; got != clusterID {
		t.Errorf("cluster id %q after restart, want %q", got, clusterID)
	}
	if hw := highWatermark(c, "keep", 1); hw != 2 {
		t.Errorf("high watermark %d after restart, want 2", hw)
	}
	// The producer's retry after the restart is still a duplicate.
	if off := mustProduce(c, "keep", 1, first); off != 0 {
		t.Errorf("retry after restart acknowledged at %d, want 0", off)
	}
	if hw := highWatermark(c, "keep", 1); hw != 2 {
		t.Errorf("high watermark %d after the retry, want 2", hw)
	}
	if next := initProducerID(c); next <= pid {
		t.Errorf("producer id %d after restart, not above %d", next, pid)
	}
	dc := roundTrip[*kmsg.DescribeConfigsResponse](c, 4, &kmsg.DescribeConfigsRequest{Resources: []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "keep", ConfigNames: []string{"retention.ms"}}}})
	if cs := dc.Resources[0].Configs; len(cs) != 1 || *cs[0].Value != "5000" {
		t.Errorf("retention.ms after restart: %+v", cs)
	}
}

// ---- Produce ----

func TestProduceErrors(t *testing.T) {
	addr := startNode(t, false)
	n := 0
	// fresh creates a topic with two partitions for one case; subtests run
	// one at a time, so n needs no lock.
	fresh := func(c *rawClient) string {
		n++
		name := fmt.Sprintf("produce-%d", n)
		createTopic(c, name, 2, nil)
		return name
	}
	// nothingWritten checks that a failed produce left the log alone.
	nothingWritten := func(t *testing.T, c *rawClient, topic string) {
		t.Helper()
		for p := int32(0); p < 2; p++ {
			if hw := highWatermark(c, topic, p); hw != 0 {
				t.Errorf("%s-%d: high watermark %d after a failed produce", topic, p, hw)
			}
		}
	}

	malformed := []struct {
		what    string
		records func() []byte
		want    *kerr.Error
	}{
		{"bad CRC", func() []byte { b := plain(2, 10).encode(); b[len(b)-1] ^= 0xff; return b }, kerr.CorruptMessage},
		{"bad CRC field", func() []byte { b := plain(2, 10).encode(); b[17] ^= 1; return b }, kerr.CorruptMessage},
		// Kafka's ProduceRequest.validateRecords: v3+ carries magic 2 only.
		{"magic 1", func() []byte { b := plain(2, 10).encode(); b[16] = 1; return b }, kerr.InvalidRecord},
		{"magic 0", func() []byte { b := plain(2, 10).encode(); b[16] = 0; return b }, kerr.InvalidRecord},
		{"two batches", func() []byte { return append(plain(1, 10).encode(), plain(1, 10).encode()...) }, kerr.InvalidRecord},
		{"truncated", func() []byte { b := plain(2, 10).encode(); return b[:len(b)-3] }, kerr.CorruptMessage},
		{"shorter than a header", func() []byte { return plain(1, 10).encode()[:40] }, kerr.CorruptMessage},
	}
	for _, tc := range malformed {
		t.Run(tc.what, func(t *testing.T) {
			c := dial(t, addr)
			topic := fresh(c)
			sp := produce(c, topic, 1, tc.records())
			wantCode(t, tc.what, sp.ErrorCode, tc.want)
			if sp.BaseOffset != -1 {
				t.Errorf("failed produce answered base offset %d, want -1", sp.BaseOffset)
			}
			nothingWritten(t, c, topic)
		})
	}

	t.Run("acks=2", func(t *testing.T) {
		c := dial(t, addr)
		topic := fresh(c)
		for _, acks := range []int16{2, -2, 3} {
			sp := produceAt(c, 11, produceReq(topic, [16]byte{}, 0, acks, plain(1, 1).encode()))
			wantCode(t, fmt.Sprintf("acks=%d", acks), sp.ErrorCode, kerr.InvalidRequiredAcks)
		}
		nothingWritten(t, c, topic)
	})
	t.Run("unknown topic or partition", func(t *testing.T) {
		c := dial(t, addr)
		topic := fresh(c)
		wantCode(t, "unknown topic", produce(c, "nope", 0, plain(1, 1).encode()).ErrorCode, kerr.UnknownTopicOrPartition)
		for _, p := range []int32{2, 100, -1} {
			wantCode(t, fmt.Sprintf("partition %d", p), produce(c, topic, p, plain(1, 1).encode()).ErrorCode, kerr.UnknownTopicOrPartition)
		}
		sp := produceAt(c, 13, produceReq("", [16]byte{7}, 0, -1, plain(1, 1).encode()))
		wantCode(t, "v13 unknown topic id", sp.ErrorCode, kerr.UnknownTopicID)
		nothingWritten(t, c, topic)
	})
	t.Run("transactional id", func(t *testing.T) {
		// Kafka's ProduceRequest validation: a transactional id with a
		// batch that is not transactional.
		c := dial(t, addr)
		topic := fresh(c)
		req := produceReq(topic, [16]byte{}, 0, -1, plain(1, 1).encode())
		req.TransactionID = kmsg.StringPtr("txn")
		wantCode(t, "transactional", produceAt(c, 11, req).ErrorCode, kerr.InvalidRecord)
		nothingWritten(t, c, topic)
	})
	t.Run("transactional batch", func(t *testing.T) {
		c := dial(t, addr)
		topic := fresh(c)
		b := idempotent(initProducerID(c), 0, 0, 1).encode()
		b[22] |= 0x10 // attributes: transactional
		fixCRC(b)
		wantCode(t, "transactional batch", produce(c, topic, 0, b).ErrorCode, kerr.InvalidRecord)
		nothingWritten(t, c, topic)
	})
	t.Run("zstd before v7", func(t *testing.T) {
		c := dial(t, addr)
		topic := fresh(c)
		b := plain(1, 1).encode()
		b[22] |= 4 // attributes: zstd
		fixCRC(b)
		for v := int16(3); v < 7; v++ {
			sp := produceAt(c, v, produceReq(topic, [16]byte{}, 0, -1, bytes.Clone(b)))
			wantCode(t, fmt.Sprintf("zstd at v%d", v), sp.ErrorCode, kerr.UnsupportedCompressionType)
		}
		nothingWritten(t, c, topic)
	})
	t.Run("message too large", func(t *testing.T) {
		c := dial(t, addr)
		createTopic(c, "small", 1, map[string]string{"max.message.bytes": "200"})
		wantCode(t, "500-byte batch", produce(c, "small", 0, plain(1, 500).encode()).ErrorCode, kerr.MessageTooLarge)
		mustProduce(c, "small", 0, plain(1, 10).encode())
	})
	t.Run("partial failure", func(t *testing.T) {
		// One bad partition does not fail the others in the request.
		c := dial(t, addr)
		topic := fresh(c)
		req := produceReq(topic, [16]byte{}, 0, -1, plain(1, 1).encode())
		bad := kmsg.NewProduceRequestTopicPartition()
		bad.Partition, bad.Records = 1, []byte{1, 2, 3}
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, bad)
		resp := roundTrip[*kmsg.ProduceResponse](c, 11, req)
		wantCode(t, "good partition", resp.Topics[0].Partitions[0].ErrorCode, nil)
		wantCode(t, "bad partition", resp.Topics[0].Partitions[1].ErrorCode, kerr.CorruptMessage)
	})

	t.Run("idempotent duplicate", func(t *testing.T) {
		c := dial(t, addr)
		topic := fresh(c)
		pid := initProducerID(c)
		first := idempotent(pid, 0, 0, 3).encode()
		if off := mustProduce(c, topic, 0, bytes.Clone(first)); off != 0 {
			t.Fatalf("first batch at %d", off)
		}
		if off := mustProduce(c, topic, 0, bytes.Clone(first)); off != 0 {
			t.Errorf("duplicate acknowledged at %d, want the original 0", off)
		}
		if off := mustProduce(c, topic, 0, idempotent(pid, 0, 3, 2).encode()); off != 3 {
			t.Errorf("next batch at %d, want 3", off)
		}
		// An older batch is still recognised while among the last five.
		if off := mustProduce(c, topic, 0, bytes.Clone(first)); off != 0 {
			t.Errorf("old duplicate acknowledged at %d, want 0", off)
		}
		if hw := highWatermark(c, topic, 0); hw != 5 {
			t.Errorf("high watermark %d, want 5", hw)
		}
		sp := fetchPartition(c, 12, fetchReq(topic, [16]byte{}, 0, 0, 0, 0))
		bs := parseBatches(t, sp.RecordBatches)
		if len(bs) != 2 || bs[0].FirstOffset != 0 || bs[1].FirstOffset != 3 {
			t.Errorf("log holds %d batches, want 2 at offsets 0 and 3", len(bs))
		}
		// Sequences are per partition: the same producer starts afresh on
		// partition 1.
		if off := mustProduce(c, topic, 1, idempotent(pid, 0, 0, 1).encode()); off != 0 {
			t.Errorf("partition 1 at %d", off)
		}
	})
	t.Run("sequence gap", func(t *testing.T) {
		c := dial(t, addr)
		topic := fresh(c)
		pid := initProducerID(c)
		mustProduce(c, topic, 0, idempotent(pid, 0, 0, 3).encode())
		for _, seq := range []int32{5, 4, 1, 2} {
			wantCode(t, fmt.Sprintf("seq %d after 0-2", seq), produce(c, topic, 0, idempotent(pid, 0, seq, 1).encode()).ErrorCode, kerr.OutOfOrderSequenceNumber)
		}
		if hw := highWatermark(c, topic, 0); hw != 3 {
			t.Errorf("high watermark %d, want 3", hw)
		}
		mustProduce(c, topic, 0, idempotent(pid, 0, 3, 1).encode())
	})
	t.Run("producer epoch", func(t *testing.T) {
		c := dial(t, addr)
		topic := fresh(c)
		pid := initProducerID(c)
		mustProduce(c, topic, 0, idempotent(pid, 0, 0, 1).encode())
		wantCode(t, "new epoch not at 0", produce(c, topic, 0, idempotent(pid, 1, 1, 1).encode()).ErrorCode, kerr.OutOfOrderSequenceNumber)
		mustProduce(c, topic, 0, idempotent(pid, 1, 0, 1).encode())
		wantCode(t, "older epoch", produce(c, topic, 0, idempotent(pid, 0, 1, 1).encode()).ErrorCode, kerr.InvalidProducerEpoch)
		if hw := highWatermark(c, topic, 0); hw != 2 {
			t.Errorf("high watermark %d, want 2", hw)
		}
	})

	t.Run("acks=0 error closes the connection", func(t *testing.T) {
		c := dial(t, addr)
		topic := fresh(c)
		c.send(at(11, produceReq(topic, [16]byte{}, 7, 0, plain(1, 1).encode())))
		c.expectClosed(ioTimeout)
		other := dial(t, addr)
		other.expectOpen()
	})
	t.Run("acks=0 success sends nothing", func(t *testing.T) {
		c := dial(t, addr)
		topic := fresh(c)
		c.send(at(11, produceReq(topic, [16]byte{}, 0, 0, plain(1, 1).encode())))
		// The next answer on the connection is the next request's.
		c.expectOpen()
		if hw := highWatermark(c, topic, 0); hw != 1 {
			t.Errorf("high watermark %d after an acks=0 produce, want 1", hw)
		}
	})
}

// ---- Fetch ----

func TestFetch(t *testing.T) {
	addr := startNode(t, false)
	c := dial(t, addr)
	id := createTopic(c, "f", 2, nil)
	mustProduce(c, "f", 0, plain(1, 10).encode())

	t.Run("offset out of range", func(t *testing.T) {
		c := dial(t, addr)
		for _, off := range []int64{2, 100, -1} {
			sp := fetchPartition(c, 12, fetchReq("f", id, 0, off, 30000, 1))
			wantCode(t, fmt.Sprintf("offset %d", off), sp.ErrorCode, kerr.OffsetOutOfRange)
			if sp.HighWatermark != 1 || sp.LogStartOffset != 0 {
				t.Errorf("offset %d: high watermark %d, log start %d; want 1, 0", off, sp.HighWatermark, sp.LogStartOffset)
			}
		}
		// At the log end is in range: nothing yet.
		sp := fetchPartition(c, 12, fetchReq("f", id, 0, 1, 0, 1))
		wantCode(t, "at the end", sp.ErrorCode, nil)
		if len(sp.RecordBatches) != 0 {
			t.Errorf("%d bytes at the log end", len(sp.RecordBatches))
		}
	})
	t.Run("errors answer at once", func(t *testing.T) {
		c := dial(t, addr)
		start := time.Now()
		wantCode(t, "unknown topic", fetchPartition(c, 12, fetchReq("nope", id, 0, 0, 30000, 1)).ErrorCode, kerr.UnknownTopicOrPartition)
		wantCode(t, "unknown partition", fetchPartition(c, 12, fetchReq("f", id, 5, 0, 30000, 1)).ErrorCode, kerr.UnknownTopicOrPartition)
		wantCode(t, "v13 unknown id", fetchPartition(c, 13, fetchReq("", [16]byte{3}, 0, 0, 30000, 1)).ErrorCode, kerr.UnknownTopicID)
		req := fetchReq("f", id, 0, 1, 30000, 1)
		req.Topics[0].Partitions[0].CurrentLeaderEpoch = 1
		wantCode(t, "leader epoch 1", fetchPartition(c, 12, req).ErrorCode, kerr.UnknownLeaderEpoch)
		if el := time.Since(start); el > 20*time.Second {
			t.Errorf("failed fetches with MaxWait 30s took %v", el)
		}
	})
	t.Run("max wait", func(t *testing.T) {
		c := dial(t, addr)
		const wait = 300 * time.Millisecond
		start := time.Now()
		sp := fetchPartition(c, 12, fetchReq("f", id, 0, 1, int32(wait/time.Millisecond), 1))
		el := time.Since(start)
		wantCode(t, "long poll", sp.ErrorCode, nil)
		if len(sp.RecordBatches) != 0 {
			t.Errorf("long poll at the end returned %d bytes", len(sp.RecordBatches))
		}
		if el < wait || el > wait+20*time.Second {
			t.Errorf("a fetch with MaxWait %v returned after %v", wait, el)
		}
	})
	t.Run("min bytes", func(t *testing.T) {
		c := dial(t, addr)
		// Data is there but less than MinBytes: wait out MaxWait, then
		// answer with what there is.
		const wait = 300 * time.Millisecond
		start := time.Now()
		sp := fetchPartition(c, 12, fetchReq("f", id, 0, 0, int32(wait/time.Millisecond), 1<<20))
		if el := time.Since(start); el < wait || el > wait+20*time.Second {
			t.Errorf("a fetch short of MinBytes returned after %v, want MaxWait %v", el, wait)
		}
		if bs := parseBatches(t, sp.RecordBatches); len(bs) != 1 {
			t.Errorf("got %d batches at MaxWait, want 1", len(bs))
		}
		// MinBytes already met: answer at once, long before MaxWait.
		start = time.Now()
		sp = fetchPartition(c, 12, fetchReq("f", id, 0, 0, 30000, 1))
		if el := time.Since(start); el > 20*time.Second {
			t.Errorf("a fetch with MinBytes met waited %v", el)
		}
		if bs := parseBatches(t, sp.RecordBatches); len(bs) != 1 {
			t.Errorf("got %d batches, want 1", len(bs))
		}
	})
	t.Run("woken by produce", func(t *testing.T) {
		// Whether the fetch is already waiting when the produce lands cannot
		// be observed from outside; a round trip on the producer's
		// connection first makes it very likely, and three rounds make a
		// fetch that is never woken fail the test.
		fc, pc := dial(t, addr), dial(t, addr)
		createTopic(fc, "wake", 2, nil)
		for round := range int64(3) {
			req := fetchReq("wake", [16]byte{}, 0, 0, 30000, 1)
			other := kmsg.NewFetchRequestTopicPartition()
			other.Partition, other.FetchOffset, other.PartitionMaxBytes = 1, 2*round, 1<<20
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, other)
			req.SetVersion(12)
			start := time.Now()
			corr := fc.send(req)
			pc.expectOpen()
			mustProduce(pc, "wake", 1, plain(2, 10).encode())
			// Read past the fetch's own 30 s, to tell a fetch that was
			// never woken from one that never answered.
			got, body, err := fc.readFrame(45 * time.Second)
			if err != nil || got != corr {
				t.Fatalf("reading the woken fetch: correlation id %d, %v", got, err)
			}
			if el := time.Since(start); el > 20*time.Second {
				t.Fatalf("round %d: fetch with MaxWait 30s returned %v after the produce that should wake it", round, el)
			}
			resp := decodeResponse(t, req, body).(*kmsg.FetchResponse)
			records := 0
			for _, sp := range resp.Topics[0].Partitions {
				wantCode(t, fmt.Sprintf("partition %d", sp.Partition), sp.ErrorCode, nil)
				for _, b := range parseBatches(t, sp.RecordBatches) {
					records += len(b.Records)
					if sp.Partition != 1 || b.FirstOffset != 2*round {
						t.Errorf("round %d: batch at %d in partition %d", round, b.FirstOffset, sp.Partition)
					}
				}
			}
			if records != 2 {
				t.Errorf("round %d: woken fetch returned %d records, want 2", round, records)
			}
		}
	})
	t.Run("max bytes", func(t *testing.T) {
		c := dial(t, addr)
		createTopic(c, "mb", 2, nil)
		var sizes []int
		for range 3 {
			b := plain(4, 200).encode()
			sizes = append(sizes, len(b))
			mustProduce(c, "mb", 0, b)
		}
		mustProduce(c, "mb", 1, plain(1, 50).encode())
		fetch := func(maxBytes int32, partMax ...int32) [][]fetchedBatch {
			req := kmsg.NewPtrFetchRequest()
			req.MaxBytes, req.MinBytes = maxBytes, 1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "mb"
			for p, m := range partMax {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.PartitionMaxBytes = int32(p), m
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			resp := roundTrip[*kmsg.FetchResponse](c, 12, req)
			var out [][]fetchedBatch
			for _, sp := range resp.Topics[0].Partitions {
				wantCode(t, "fetch", sp.ErrorCode, nil)
				out = append(out, parseBatches(t, sp.RecordBatches))
			}
			return out
		}
		counts := func(r [][]fetchedBatch) []int {
			var n []int
			for _, bs := range r {
				n = append(n, len(bs))
			}
			return n
		}
		all := int32(sizes[0] + sizes[1] + sizes[2])
		cases := []struct {
			what     string
			maxBytes int32
			partMax  []int32
			want     []int
		}{
			{"everything fits", 1 << 20, []int32{1 << 20, 1 << 20}, []int{3, 1}},
			{"partition limit one byte short of three", 1 << 20, []int32{all - 1, 1 << 20}, []int{2, 1}},
			{"partition limit of exactly two", 1 << 20, []int32{int32(sizes[0] + sizes[1]), 1 << 20}, []int{2, 1}},
			{"partition limit below one batch: at least one", 1 << 20, []int32{1, 1 << 20}, []int{1, 1}},
			{"response limit below one batch: one batch in all", 1, []int32{1 << 20, 1 << 20}, []int{1, 0}},
			{"response limit fits two", int32(sizes[0] + sizes[1]), []int32{1 << 20, 1 << 20}, []int{2, 0}},
			{"only the first partition with data gets an oversized batch", 1 << 20, []int32{0, 1}, []int{1, 0}},
		}
		for _, tc := range cases {
			if got := counts(fetch(tc.maxBytes, tc.partMax...)); !slices.Equal(got, tc.want) {
				t.Errorf("%s: batches per partition %v, want %v", tc.what, got, tc.want)
			}
		}
	})
	t.Run("sessions", func(t *testing.T) {
		c := dial(t, addr)
		for _, v := range []int16{7, 12, 18} {
			req := fetchReq("f", id, 0, 0, 0, 0)
			req.SessionID, req.SessionEpoch = 5, 1
			resp := roundTrip[*kmsg.FetchResponse](c, v, req)
			wantCode(t, fmt.Sprintf("v%d session 5", v), resp.ErrorCode, kerr.FetchSessionIDNotFound)
			if len(resp.Topics) != 0 {
				t.Errorf("v%d: session error answered with %d topics", v, len(resp.Topics))
			}
			req.SessionID, req.SessionEpoch = 0, 3
			wantCode(t, fmt.Sprintf("v%d epoch 3 without a session", v), roundTrip[*kmsg.FetchResponse](c, v, req).ErrorCode, kerr.InvalidFetchSessionEpoch)
			// A full request asking for a session (epoch 0) gets none.
			req.SessionEpoch = 0
			resp = roundTrip[*kmsg.FetchResponse](c, v, req)
			wantCode(t, fmt.Sprintf("v%d new session", v), resp.ErrorCode, nil)
			if resp.SessionID != 0 || len(resp.Topics) != 1 {
				t.Errorf("v%d: session %d, %d topics; want 0, 1", v, resp.SessionID, len(resp.Topics))
			}
		}
	})
	t.Run("topic ids", func(t *testing.T) {
		c := dial(t, addr)
		for _, v := range []int16{13, 16, 18} {
			resp := roundTrip[*kmsg.FetchResponse](c, v, fetchReq("", id, 0, 0, 0, 0))
			st := resp.Topics[0]
			if st.TopicID != id {
				t.Errorf("v%d: answered for id %x, want %x", v, st.TopicID, id)
			}
			wantCode(t, fmt.Sprintf("v%d by id", v), st.Partitions[0].ErrorCode, nil)
			if bs := parseBatches(t, st.Partitions[0].RecordBatches); len(bs) != 1 {
				t.Errorf("v%d: %d batches, want 1", v, len(bs))
			}
		}
	})
}

// ---- ListOffsets ----

func TestListOffsets(t *testing.T) {
	c := dial(t, startNode(t, false))
	createTopic(c, "lo", 2, nil)
	for _, ts := range [][]int64{{1000, 1005, 1002}, {2000, 3000, 2500}, {1500}} {
		b := plain(len(ts), 4)
		b.Timestamps = ts
		mustProduce(c, "lo", 0, b.encode())
	}
	cases := []struct {
		what       string
		v          int16
		ts         int64
		off, found int64 // found: the timestamp answered
	}{
		{"latest", 1, -1, 7, -1},
		{"earliest", 1, -2, 0, -1},
		{"earliest local", 8, -4, 0, -1},
		{"earliest pending upload (no tiered storage)", 9, -5, -1, -1},
		{"max timestamp", 7, -3, 4, 3000},
		{"timestamp 0", 1, 0, 0, 1000},
		{"timestamp 1003", 1, 1003, 1, 1005},
		{"timestamp 1005", 1, 1005, 1, 1005},
		{"timestamp 1400", 4, 1400, 3, 2000},
		{"timestamp 2600", 11, 2600, 4, 3000},
		{"timestamp after every record", 1, 3001, -1, -1},
	}
	for _, tc := range cases {
		sp := listOffsetAt(c, tc.v, "lo", 0, tc.ts)
		wantCode(t, tc.what, sp.ErrorCode, nil)
		if sp.Offset != tc.off || sp.Timestamp != tc.found {
			t.Errorf("%s (v%d): offset %d timestamp %d, want %d %d", tc.what, tc.v, sp.Offset, sp.Timestamp, tc.off, tc.found)
		}
		// The epoch the offset was written in (the topic's only, 0);
		// Kafka's unknown (-1) when no offset is found.
		if wantEpoch := min(int32(tc.off), 0); tc.v >= 4 && sp.LeaderEpoch != wantEpoch {
			t.Errorf("%s: leader epoch %d, want %d", tc.what, sp.LeaderEpoch, wantEpoch)
		}
	}
	// An empty partition: latest and earliest are 0, a timestamp finds
	// nothing, and so does max timestamp.
	for _, ts := range []int64{-1, -2} {
		if sp := listOffset(c, "lo", 1, ts); sp.ErrorCode != 0 || sp.Offset != 0 {
			t.Errorf("empty partition, timestamp %d: offset %d error %s", ts, sp.Offset, codeName(sp.ErrorCode))
		}
	}
	for _, ts := range []int64{-3, 0} {
		if sp := listOffset(c, "lo", 1, ts); sp.ErrorCode != 0 || sp.Offset != -1 || sp.Timestamp != -1 {
			t.Errorf("empty partition, timestamp %d: offset %d timestamp %d error %s", ts, sp.Offset, sp.Timestamp, codeName(sp.ErrorCode))
		}
	}
	wantCode(t, "unknown topic", listOffset(c, "nope", 0, -1).ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "unknown partition", listOffset(c, "lo", 2, -1).ErrorCode, kerr.UnknownTopicOrPartition)
}

// ---- DescribeConfigs, DescribeCluster, InitProducerId ----

func TestDescribeConfigs(t *testing.T) {
	addr := startNode(t, true)
	c := dial(t, addr)
	createTopic(c, "dc", 1, map[string]string{"retention.ms": "1000"})
	describe := func(v int16, typ kmsg.ConfigResourceType, name string, names ...string) kmsg.DescribeConfigsResponseResource {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.ConfigNames = typ, name, names
		req.Resources = append(req.Resources, rr)
		req.IncludeSynonyms, req.IncludeDocumentation = true, true
		resp := roundTrip[*kmsg.DescribeConfigsResponse](c, v, req)
		if len(resp.Resources) != 1 {
			t.Fatalf("%d resources", len(resp.Resources))
		}
		sr := resp.Resources[0]
		if sr.ResourceType != typ || sr.ResourceName != name {
			t.Errorf("answered for %v %q, want %v %q", sr.ResourceType, sr.ResourceName, typ, name)
		}
		return sr
	}
	find := func(sr kmsg.DescribeConfigsResponseResource, name string) *kmsg.DescribeConfigsResponseResourceConfig {
		for i := range sr.Configs {
			if sr.Configs[i].Name == name {
				return &sr.Configs[i]
			}
		}
		t.Fatalf("config %s missing", name)
		return nil
	}

	for v := int16(0); v <= 4; v++ {
		sr := describe(v, kmsg.ConfigResourceTypeTopic, "dc")
		wantCode(t, fmt.Sprintf("v%d topic", v), sr.ErrorCode, nil)
		set, def := find(sr, "retention.ms"), find(sr, "cleanup.policy")
		if *set.Value != "1000" || *def.Value != "delete" {
			t.Errorf("v%d: retention.ms=%s cleanup.policy=%s", v, *set.Value, *def.Value)
		}
		if v == 0 && (set.IsDefault || !def.IsDefault) {
			t.Errorf("v0: IsDefault %v for a set config, %v for a default", set.IsDefault, def.IsDefault)
		}
		if v >= 1 && (set.Source != kmsg.ConfigSourceDynamicTopicConfig || def.Source != kmsg.ConfigSourceDefaultConfig) {
			t.Errorf("v%d: sources %v and %v", v, set.Source, def.Source)
		}
		if v >= 1 && len(set.ConfigSynonyms) == 0 {
			t.Errorf("v%d: synonyms asked for, none given", v)
		}
		if v >= 3 && (set.ConfigType != kmsg.ConfigTypeLong || set.Documentation == nil) {
			t.Errorf("v%d: type %v, documentation %v", v, set.ConfigType, set.Documentation)
		}
	}
	if sr := describe(4, kmsg.ConfigResourceTypeTopic, "dc", "retention.ms"); len(sr.Configs) != 1 {
		t.Errorf("asked for one config, got %d", len(sr.Configs))
	}
	sr := describe(4, kmsg.ConfigResourceTypeTopic, "nope")
	wantCode(t, "unknown topic", sr.ErrorCode, kerr.UnknownTopicOrPartition)
	if len(sr.Configs) != 0 {
		t.Errorf("unknown topic with %d configs", len(sr.Configs))
	}

	sr = describe(4, kmsg.ConfigResourceTypeBroker, "0")
	wantCode(t, "broker 0", sr.ErrorCode, nil)
	if v := find(sr, "auto.create.topics.enable"); *v.Value != "true" {
		t.Errorf("auto.create.topics.enable=%s", *v.Value)
	}
	if v := find(sr, "advertised.listeners"); *v.Value != "PLAINTEXT://"+addr {
		t.Errorf("advertised.listeners=%s, want PLAINTEXT://%s", *v.Value, addr)
	}
	if v := find(sr, "connections.max.reauth.ms"); *v.Value != "0" {
		t.Errorf("connections.max.reauth.ms=%s, want 0 (no --sasl-session-lifetime)", *v.Value)
	}
	sr = describe(4, kmsg.ConfigResourceTypeBroker, "")
	wantCode(t, "cluster defaults", sr.ErrorCode, nil)
	if len(sr.Configs) != 0 {
		t.Errorf("cluster defaults: %d configs, want none", len(sr.Configs))
	}
	wantCode(t, "broker 7", describe(4, kmsg.ConfigResourceTypeBroker, "7").ErrorCode, kerr.InvalidRequest)
	sr = describe(4, kmsg.ConfigResourceTypeBrokerLogger, "0")
	if wantCode(t, "broker logger", sr.ErrorCode, nil); len(sr.Configs) != 1 || sr.Configs[0].Name != "root" {
		t.Errorf("broker logger: %+v, want the root logger", sr.Configs)
	}
	wantCode(t, "broker logger of broker 7", describe(4, kmsg.ConfigResourceTypeBrokerLogger, "7").ErrorCode, kerr.InvalidRequest)
	wantCode(t, "client metrics", describe(4, kmsg.ConfigResourceTypeClientMetrics, "x").ErrorCode, kerr.InvalidRequest)
}

func TestDescribeCluster(t *testing.T) {
	addr := startNode(t, false)
	c := dial(t, addr)
	clusterID := *roundTrip[*kmsg.MetadataResponse](c, 12, kmsg.NewPtrMetadataRequest()).ClusterID
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = true
		resp := roundTrip[*kmsg.DescribeClusterResponse](c, v, req)
		wantCode(t, fmt.Sprintf("v%d", v), resp.ErrorCode, nil)
		if resp.ClusterID != clusterID || resp.ControllerID != 0 {
			t.Errorf("v%d: cluster %q controller %d; want %q, 0", v, resp.ClusterID, resp.ControllerID, clusterID)
		}
		if len(resp.Brokers) != 1 || fmt.Sprintf("%s:%d", resp.Brokers[0].Host, resp.Brokers[0].Port) != addr {
			t.Errorf("v%d: brokers %+v, want one at %s", v, resp.Brokers, addr)
		}
		if resp.ClusterAuthorizedOperations == -2147483648 {
			t.Errorf("v%d: authorized operations asked for, not given", v)
		}
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 2 // controllers
	resp := roundTrip[*kmsg.DescribeClusterResponse](c, 1, req)
	wantCode(t, "controller endpoints", resp.ErrorCode, kerr.UnsupportedEndpointType)
	if len(resp.Brokers) != 0 {
		t.Errorf("controller endpoints answered with %d brokers", len(resp.Brokers))
	}
}

// TestFindCoordinator: groups (the empty id too, as Kafka) and
// transactional ids are coordinated here; share keys and unknown key
// types get Kafka's errors, per key from v4 and for the whole request
// before.
func TestFindCoordinator(t *testing.T) {
	addr := startNode(t, false)
	c := dial(t, addr)
	for v := int16(0); v <= 6; v++ {
		for _, tc := range []struct {
			typ  int8
			key  string
			want *kerr.Error
		}{
			{0, "g", nil}, {0, "", nil}, {1, "txn", nil},
			{2, "share", kerr.InvalidRequest}, {9, "g", kerr.InvalidRequest},
		} {
			if v == 0 && tc.typ != 0 {
				continue // v0 has no key type
			}
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType = tc.typ
			req.CoordinatorKey, req.CoordinatorKeys = tc.key, []string{tc.key, "other"}
			resp := roundTrip[*kmsg.FindCoordinatorResponse](c, v, req)
			name := fmt.Sprintf("v%d type %d key %q", v, tc.typ, tc.key)
			node, code, msg := resp.NodeID, resp.ErrorCode, resp.ErrorMessage
			if v >= 4 {
				if len(resp.Coordinators) != 2 || resp.Coordinators[0].Key != tc.key || resp.Coordinators[1].Key != "other" {
					t.Fatalf("%s: coordinators %+v, want one per key in order", name, resp.Coordinators)
				}
				node, code, msg = resp.Coordinators[0].NodeID, resp.Coordinators[0].ErrorCode, resp.Coordinators[0].ErrorMessage
			}
			wantCode(t, name, code, tc.want)
			if tc.want == nil && node != 0 || tc.want != nil && node != -1 {
				t.Errorf("%s: node %d", name, node)
			}
			if v >= 1 && v < 4 && tc.want == nil && (msg == nil || *msg != "NONE") {
				t.Errorf("%s: error message %v, want \"NONE\" as Kafka", name, msg)
			}
		}
	}
}

func TestInitProducerID(t *testing.T) {
	c := dial(t, startNode(t, false))
	seen := map[int64]bool{}
	txnPID := int64(-1)
	for v := int16(0); v <= 5; v++ {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionTimeoutMillis = 60000
		resp := roundTrip[*kmsg.InitProducerIDResponse](c, v, req)
		wantCode(t, fmt.Sprintf("v%d", v), resp.ErrorCode, nil)
		if resp.ProducerID < 0 || resp.ProducerEpoch != 0 || seen[resp.ProducerID] {
			t.Errorf("v%d: id %d epoch %d (seen before: %v)", v, resp.ProducerID, resp.ProducerEpoch, seen[resp.ProducerID])
		}
		seen[resp.ProducerID] = true

		// A transactional id: the same producer id, its epoch bumped by
		// each InitProducerId (which fences the previous producer).
		req.TransactionalID = kmsg.StringPtr("txn")
		resp = roundTrip[*kmsg.InitProducerIDResponse](c, v, req)
		wantCode(t, fmt.Sprintf("v%d transactional", v), resp.ErrorCode, nil)
		if resp.ProducerEpoch != int16(v) || (v > 0 && resp.ProducerID != txnPID) {
			t.Errorf("v%d transactional: id %d epoch %d, want %d %d", v, resp.ProducerID, resp.ProducerEpoch, txnPID, v)
		}
		txnPID = resp.ProducerID
	}
}

// ---- Wire robustness ----

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServer runs a kafka.Server on its own topic log and a 127.0.0.1
// listener, logging to the returned buffer.
func startServer(t *testing.T, cfg kafka.Config) (string, *syncBuffer) {
	t.Helper()
	addr, logs, _ := startKafka(t, cfg)
	return addr, logs
}

// startKafka is startServer that also returns the server.
func startKafka(t *testing.T, cfg kafka.Config) (string, *syncBuffer, *kafka.Server) {
	t.Helper()
	dir := t.TempDir()
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log, err := topics.Open(topics.Config{Dir: filepath.Join(dir, "topics"), Store: st})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cfg.Topics = log
	if cfg.Groups == nil {
		groups, err := coordinator.Start(coordinator.Config{}, coordinator.Options{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Groups = groups
	}
	if cfg.Share == nil {
		share, err := sharecoord.Start(sharecoord.Config{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(share.Close)
		cfg.Share = share
	}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := kafka.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, s, ln, func() {
		log.Close()
		st.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	return ln.Addr().String(), logs, s
}

// serve runs s on ln until the test ends, then shuts it down, checks
// that Serve returned cleanly, and calls after.
func serve(t *testing.T, s *kafka.Server, ln net.Listener, after func()) {
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		after()
	})
}

// TestBadFrames: a frame over MaxRequestBytes, one that does not decode, and
// an API key or version the server does not serve each close the
// connection with a log line; requests read before the bad frame are still
// answered, and other connections, one of them in a long poll, are
// unaffected.
func TestBadFrames(t *testing.T) {
	const maxRequest = 4096
	// Every bad frame's line is checked: no rate limit within the test.
	addr, logs := startServer(t, kafka.Config{MaxRequestBytes: maxRequest, WarnBurst: 1000})

	setup := dial(t, addr)
	createTopic(setup, "w", 1, nil)
	bystander := dial(t, addr)
	pollReq := at(12, fetchReq("w", [16]byte{}, 0, 0, 1000, 1))
	pollCorr := bystander.send(pollReq)

	size := func(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	frame := func(b []byte) []byte { return append(size(uint32(len(b))), b...) }
	cases := []struct {
		what  string
		bytes []byte
		log   string // a regexp the server's log must match
	}{
		{"one byte over MaxRequestBytes", size(maxRequest + 1), `"closing connection: bad request size" remote=\S+ size=4097 max=4096`},
		{"2 GiB", size(1<<31 - 1), `bad request size" remote=\S+ size=2147483647`},
		{"negative size", size(0xffffffff), `bad request size" remote=\S+ size=-1 `},
		{"size below a header", append(size(3), 0, 1, 2), `bad request size" remote=\S+ size=3 `},
		{"short header", frame([]byte{0, 3, 0, 1, 0, 0, 0, 1, 0}), `"closing connection: bad request" remote=\S+ err="bad frame: short header"`},
		{"client id past the frame", frame([]byte{0, 3, 0, 1, 0, 0, 0, 1, 0, 9, 'a'}), `client id overflows frame`},
		{"negative client id length", frame([]byte{0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xf0}), `bad client id length -16`},
		{"body does not decode", rawFrame(3, 1, 1, []byte{0, 0, 0, 5}), `decode Metadata v1: `},
		{"unterminated tag count", rawFrame(3, 12, 1, []byte{0x80}), `bad tag count`},
		{"tag past the frame", rawFrame(3, 12, 1, []byte{1, 0, 5, 'x'}), `bad tag size`},
		{"body's tag count past the frame", rawFrame(3, 12, 1, hostileMetadataBody), `decode Metadata v12: `},
		{"unserved key", frame(requestBytes(1, kmsg.NewPtrLeaderAndISRRequest())), `unsupported api key 4 version 1`},
		{"unknown key", rawFrame(1000, 0, 1, nil), `unsupported api key 1000 version 0`},
		{"produce v2", frame(requestBytes(2, produceReq("w", [16]byte{}, 0, 1, nil))), `unsupported api key 0 version 2"`},
		{"produce v14", rawFrame(0, 14, 1, []byte{0}), `unsupported api key 0 version 14"`},
		{"fetch v3", frame(requestBytes(3, fetchReq("w", [16]byte{}, 0, 0, 0, 0))), `unsupported api key 1 version 3"`},
		{"metadata v14", rawFrame(3, 14, 1, []byte{0}), `unsupported api key 3 version 14"`},
	}
	for _, tc := range cases {
		t.Run(tc.what, func(t *testing.T) {
			c := dial(t, addr)
			// A request pipelined before the bad frame is answered first.
			ok := at(1, kmsg.NewPtrApiVersionsRequest())
			corr := c.send(ok)
			c.write(tc.bytes)
			if r := c.recv(ok, corr).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
				t.Errorf("request before the bad frame: error %s", codeName(r.ErrorCode))
			}
			c.expectClosed(ioTimeout)
			if !regexp.MustCompile(tc.log).MatchString(logs.String()) {
				t.Errorf("no log line matches %s", tc.log)
			}
		})
	}

	resp := bystander.recv(pollReq, pollCorr).(*kmsg.FetchResponse)
	wantCode(t, "the bystander's long poll", resp.Topics[0].Partitions[0].ErrorCode, nil)
	bystander.expectOpen()
	dial(t, addr).expectOpen()
}

// TestPipelining: 50 requests of every kind, written at once behind a
// long-polling fetch, are answered in request order; produces are appended
// in request order too, and an acks=0 produce in the middle gets no answer.
func TestPipelining(t *testing.T) {
	addr, _ := startServer(t, kafka.Config{AutoCreateTopics: true})
	setup := dial(t, addr)
	createTopic(setup, "idle", 1, nil)
	createTopic(setup, "busy", 1, nil)

	c := dial(t, addr)
	type sent struct {
		req    kmsg.Request
		corr   int32
		answer bool
	}
	var out []sent
	var wire []byte
	push := func(v int16, req kmsg.Request, answer bool) {
		req.SetVersion(v)
		b, corr := c.frame(req)
		wire = append(wire, b...)
		out = append(out, sent{req, corr, answer})
	}
	const poll = 500 * time.Millisecond
	push(12, fetchReq("idle", [16]byte{}, 0, 0, int32(poll/time.Millisecond), 1), true)
	kinds := []func(i int){
		func(int) {
			req := kmsg.NewPtrMetadataRequest()
			req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("busy")}}
			push(12, req, true)
		},
		func(int) {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "pipe", "1"
			push(3, req, true)
		},
		func(int) {
			req := kmsg.NewPtrListOffsetsRequest()
			req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "busy", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Timestamp: -1, CurrentLeaderEpoch: -1}}}}
			push(7, req, true)
		},
		func(int) { push(9, produceReq("busy", [16]byte{}, 0, 1, plain(1, 8).encode()), true) },
		func(int) {
			req := kmsg.NewPtrDescribeConfigsRequest()
			req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "busy"}}
			push(4, req, true)
		},
		func(int) { push(4, kmsg.NewPtrInitProducerIDRequest(), true) },
		func(int) { push(11, fetchReq("busy", [16]byte{}, 0, 0, 0, 0), true) },
		func(int) { push(0, kmsg.NewPtrDescribeClusterRequest(), true) },
		func(i int) {
			req, _ := createReq(fmt.Sprintf("pipe-%d", i), 1, 1)
			req.ValidateOnly = true
			push(5, req, true)
		},
		func(int) { push(11, produceReq("busy", [16]byte{}, 0, 0, plain(1, 8).encode()), false) },
	}
	for i := 0; len(out) < 50; i++ {
		kinds[i%len(kinds)](i)
	}
	start := time.Now()
	c.write(wire)

	var produced []int64
	answered, want := 0, 0
	for _, s := range out {
		if s.answer {
			want++
		}
	}
	for i, s := range out {
		if !s.answer {
			continue
		}
		corr, body, err := c.readFrame(ioTimeout)
		if err != nil {
			t.Fatalf("response %d of %d: %v", answered, len(out), err)
		}
		if corr != s.corr {
			t.Fatalf("response %d has correlation id %d, want %d (%s)", answered, corr, s.corr, kmsg.NameForKey(s.req.Key()))
		}
		resp := decodeResponse(t, s.req, body)
		if i == 0 {
			if el := time.Since(start); el < poll {
				t.Errorf("the long poll answered after %v, before its MaxWait %v", el, poll)
			}
		}
		if r, ok := resp.(*kmsg.ProduceResponse); ok {
			sp := r.Topics[0].Partitions[0]
			wantCode(t, "pipelined produce", sp.ErrorCode, nil)
			produced = append(produced, sp.BaseOffset)
		}
		answered++
	}
	// acks=1 and acks=0 produces alternate in request order, so the
	// answered ones landed at every other offset.
	for i, off := range produced {
		if off != int64(2*i) {
			t.Fatalf("pipelined produces landed at %v, want 0, 2, 4, ...", produced)
		}
	}
	if answered != want || len(produced) != 5 {
		t.Errorf("%d answers, %d produces; want %d, 5", answered, len(produced), want)
	}
	c.expectOpen()
	if hw := highWatermark(c, "busy", 0); hw != 9 {
		t.Errorf("high watermark %d after 9 produces", hw)
	}
}
