package kafka_test

import (
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareFetchReq is a ShareFetch at epoch of member of g for partitions
// of topic, waiting at most maxWait.
func shareFetchReq(g, member string, epoch int32, topic [16]byte, maxWait int32, partitions ...int32) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(g), kmsg.StringPtr(member), epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords = maxWait, 1, 1<<20, 500
	if len(partitions) > 0 {
		rt := kmsg.ShareFetchRequestTopic{TopicID: topic}
		for _, p := range partitions {
			rt.Partitions = append(rt.Partitions, kmsg.ShareFetchRequestTopicPartition{Partition: p})
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// withAcks adds acknowledgements of partition of topic to req: first
// to last, one type for them all.
func withAcks(req *kmsg.ShareFetchRequest, topic [16]byte, partition int32, first, last int64, typ int8) *kmsg.ShareFetchRequest {
	b := kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}
	for i := range req.Topics {
		if req.Topics[i].TopicID != topic {
			continue
		}
		for j := range req.Topics[i].Partitions {
			if req.Topics[i].Partitions[j].Partition == partition {
				req.Topics[i].Partitions[j].AcknowledgementBatches = append(req.Topics[i].Partitions[j].AcknowledgementBatches, b)
				return req
			}
		}
	}
	req.Topics = append(req.Topics, kmsg.ShareFetchRequestTopic{TopicID: topic, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: partition, AcknowledgementBatches: []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{b}}}})
	return req
}

// shareAckReq is a ShareAcknowledge at epoch of offsets first to last of
// partition 0 of topic.
func shareAckReq(g, member string, epoch int32, topic [16]byte, first, last int64, typ int8) *kmsg.ShareAcknowledgeRequest {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.Version = 2
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(g), kmsg.StringPtr(member), epoch
	if first >= 0 {
		req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: topic, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0,
			AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}}}}}}
	}
	return req
}

// acquired is a share fetch response partition's acquired runs as
// "first-last@count ...".
func acquired(resp *kmsg.ShareFetchResponse, partition int32) (string, *kmsg.ShareFetchResponseTopicPartition) {
	for _, t := range resp.Topics {
		for i, p := range t.Partitions {
			if p.Partition != partition {
				continue
			}
			s := ""
			for _, r := range p.AcquiredRecords {
				if s != "" {
					s += " "
				}
				s += fmt.Sprintf("%d-%d@%d", r.FirstOffset, r.LastOffset, r.DeliveryCount)
			}
			return s, &t.Partitions[i]
		}
	}
	return "", nil
}

// shareFetchSweepCases are TestVersionSweep's cases for ShareFetch and
// ShareAcknowledge: a member joins, opens a session and takes what was
// produced; it acknowledges it.
func shareFetchSweepCases(topic string, topicID [16]byte) map[int16]sweepCase {
	name := func(key kmsg.Key, v int16) string { return fmt.Sprintf("sweep-%s-v%d", key.Name(), v) }
	join := func(t *testing.T, c *rawClient, g string) {
		hb := roundTrip[*kmsg.ShareGroupHeartbeatResponse](c, 1, shareJoinReq(g, "m-"+g, topic))
		wantCode(t, "join", hb.ErrorCode, nil)
	}
	setEarliest := func(t *testing.T, c *rawClient, g string) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, g
		res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
		req.Resources = append(req.Resources, res)
		resp := roundTrip[*kmsg.IncrementalAlterConfigsResponse](c, 1, req)
		wantCode(t, "set earliest", resp.Resources[0].ErrorCode, nil)
	}
	return map[int16]sweepCase{
		// WriteShareGroupState: Kafka's own write, state batches, is
		// refused for each partition; the commands nodes forward in it
		// are TestShareForwarded's.
		kmsg.WriteShareGroupState.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrWriteShareGroupStateRequest()
			req.GroupID = "g"
			req.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: topicID, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{Partition: 0, StartOffset: 3}}}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.WriteShareGroupStateResponse)
				if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
					t.Fatalf("topics %+v", resp.Topics)
				}
				wantCode(t, "a state write", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRequest)
			}
		},
		kmsg.ShareFetch.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.ShareFetch, v)
			join(t, c, g)
			setEarliest(t, c, g)
			mustProduce(c, topic, 0, plain(3, 10).encode())
			return shareFetchReq(g, "m-"+g, 0, topicID, 5000, 0), func(r kmsg.Response) {
				resp := r.(*kmsg.ShareFetchResponse)
				wantCode(t, "share fetch", resp.ErrorCode, nil)
				if resp.AcquisitionLockTimeoutMillis != 30000 {
					t.Errorf("lock timeout %d, want Kafka's 30000", resp.AcquisitionLockTimeoutMillis)
				}
				got, p := acquired(resp, 0)
				if p == nil || p.ErrorCode != 0 || got == "" || len(p.Records) == 0 {
					t.Fatalf("acquired %q, partition %+v", got, p)
				}
			}
		},
		kmsg.ShareAcknowledge.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.ShareAcknowledge, v)
			join(t, c, g)
			setEarliest(t, c, g)
			end := mustProduce(c, topic, 0, plain(2, 10).encode())
			f := roundTrip[*kmsg.ShareFetchResponse](c, 2, shareFetchReq(g, "m-"+g, 0, topicID, 5000, 0))
			got, _ := acquired(f, 0)
			if got == "" {
				t.Fatalf("nothing acquired: %+v", f)
			}
			return shareAckReq(g, "m-"+g, 1, topicID, 0, end+1, 1), func(r kmsg.Response) {
				resp := r.(*kmsg.ShareAcknowledgeResponse)
				wantCode(t, "share acknowledge", resp.ErrorCode, nil)
				if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
					t.Fatalf("topics %+v", resp.Topics)
				}
				wantCode(t, "partition", resp.Topics[0].Partitions[0].ErrorCode, nil)
			}
		},
	}
}

// TestShareFetch drives a share group's fetches and acknowledgements
// over the wire: sessions and their epochs, acquisition with delivery
// counts, release and redelivery, acceptance, rejection, renewal,
// piggybacked acknowledgements, the session's close, a connection's
// close giving back what its member held, long polling woken by a
// produce, and every invalid request's error.
func TestShareFetch(t *testing.T) {
	addr := startNode(t, false)
	c := dial(t, addr)
	const topic, g = "share-fetch", "sg"
	id := createTopic(c, topic, 2, nil)
	join := func(c *rawClient, member string) {
		hb := roundTrip[*kmsg.ShareGroupHeartbeatResponse](c, 1, shareJoinReq(g, member, topic))
		wantCode(t, "join "+member, hb.ErrorCode, nil)
	}
	join(c, "a")
	cfg := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, g
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	cfg.Resources = append(cfg.Resources, res)
	wantCode(t, "earliest", roundTrip[*kmsg.IncrementalAlterConfigsResponse](c, 1, cfg).Resources[0].ErrorCode, nil)
	for range 2 {
		mustProduce(c, topic, 0, plain(5, 10).encode()) // offsets 0-9, two batches
	}
	fetch := func(c *rawClient, req *kmsg.ShareFetchRequest) *kmsg.ShareFetchResponse {
		t.Helper()
		return roundTrip[*kmsg.ShareFetchResponse](c, req.Version, req)
	}

	// The errors before a session.
	bad := []struct {
		what string
		req  *kmsg.ShareFetchRequest
		want *kerr.Error
	}{
		{"no member id", shareFetchReq(g, "", 0, id, 0, 0), kerr.InvalidRequest},
		{"a member id too long", shareFetchReq(g, "0123456789012345678901234567890123456789", 0, id, 0, 0), kerr.InvalidRequest},
		{"acknowledgements opening a session", withAcks(shareFetchReq(g, "a", 0, id, 0, 0), id, 0, 0, 0, 1), kerr.InvalidRequest},
		{"no such group", shareFetchReq("nope", "a", 0, id, 0, 0), kerr.GroupIDNotFound},
		{"no such member", shareFetchReq(g, "zz", 0, id, 0, 0), kerr.UnknownMemberID},
		{"an incremental fetch with no session", shareFetchReq(g, "a", 3, id, 0, 0), kerr.ShareSessionNotFound},
		{"closing no session", shareFetchReq(g, "a", -1, id, 0), kerr.ShareSessionNotFound},
	}
	renew := shareFetchReq(g, "a", 1, id, 0)
	renew.IsRenewAck = true
	bad = append(bad, struct {
		what string
		req  *kmsg.ShareFetchRequest
		want *kerr.Error
	}{"a renewal with fetch parameters", withAcks(renew, id, 0, 0, 0, 4), kerr.InvalidRequest})
	for _, b := range bad {
		wantCode(t, b.what, fetch(c, b.req).ErrorCode, b.want)
	}
	wantCode(t, "acknowledge at epoch 0", roundTrip[*kmsg.ShareAcknowledgeResponse](c, 2, shareAckReq(g, "a", 0, id, 0, 0, 1)).ErrorCode, kerr.InvalidShareSessionEpoch)
	wantCode(t, "acknowledge with no session", roundTrip[*kmsg.ShareAcknowledgeResponse](c, 2, shareAckReq(g, "a", 1, id, 0, 0, 1)).ErrorCode, kerr.ShareSessionNotFound)

	// A session: everything produced, delivery count 1, the records
	// with it; the empty partition is in the full response with no
	// records.
	resp := fetch(c, shareFetchReq(g, "a", 0, id, 1000, 0, 1))
	wantCode(t, "open", resp.ErrorCode, nil)
	if got, p := acquired(resp, 0); got != "0-9@1" || len(parseBatches(t, p.Records)) != 2 {
		t.Fatalf("first fetch acquired %q (want 0-9@1 with both batches)", got)
	}
	if _, p := acquired(resp, 1); p == nil || p.ErrorCode != 0 || len(p.AcquiredRecords) != 0 {
		t.Fatalf("the empty partition: %+v", p)
	}
	wantCode(t, "a wrong epoch", fetch(c, shareFetchReq(g, "a", 5, id, 0)).ErrorCode, kerr.InvalidShareSessionEpoch)

	// Release 0-4 and reject 9 with the next fetch: 0-4 come back at
	// delivery count 2; the incremental response leaves the quiet
	// partition 1 out.
	req := withAcks(shareFetchReq(g, "a", 1, id, 1000), id, 0, 0, 4, 2)
	req = withAcks(req, id, 0, 9, 9, 3)
	resp = fetch(c, req)
	wantCode(t, "release", resp.ErrorCode, nil)
	got, p := acquired(resp, 0)
	if p == nil || p.AcknowledgeErrorCode != 0 || got != "0-4@2" {
		t.Fatalf("after releasing 0-4: acquired %q, partition %+v", got, p)
	}
	if _, p := acquired(resp, 1); p != nil {
		t.Errorf("an incremental response named the quiet partition 1: %+v", p)
	}
	// Accepting what is not held: INVALID_RECORD_STATE for the
	// partition, nothing changed; RENEW outside a renewal:
	// INVALID_REQUEST.
	ack := roundTrip[*kmsg.ShareAcknowledgeResponse](c, 2, shareAckReq(g, "a", 2, id, 9, 9, 1))
	wantCode(t, "accept a rejected record", ack.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRecordState)
	ack = roundTrip[*kmsg.ShareAcknowledgeResponse](c, 2, shareAckReq(g, "a", 3, id, 0, 4, 4))
	wantCode(t, "renew outside a renewal", ack.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRequest)
	// A renewal (KIP-1222) of 0-4.
	renew = shareFetchReq(g, "a", 4, id, 0)
	renew.IsRenewAck, renew.MaxBytes, renew.MinBytes, renew.MaxRecords = true, 0, 0, 0
	resp = fetch(c, withAcks(renew, id, 0, 0, 4, 4))
	if _, p := acquired(resp, 0); resp.ErrorCode != 0 || p == nil || p.AcknowledgeErrorCode != 0 || len(p.AcquiredRecords) != 0 {
		t.Fatalf("renewal: %v, partition %+v", codeName(resp.ErrorCode), p)
	}
	// Accept 0-8 with ShareAcknowledge.
	ack = roundTrip[*kmsg.ShareAcknowledgeResponse](c, 2, shareAckReq(g, "a", 5, id, 0, 8, 1))
	wantCode(t, "accept 0-8", ack.Topics[0].Partitions[0].ErrorCode, nil)

	// Long polling: a fetch waiting on nothing is answered by a produce.
	start := time.Now()
	done := make(chan *kmsg.ShareFetchResponse, 1)
	go func() { done <- fetch(c, shareFetchReq(g, "a", 6, id, 10000)) }()
	time.Sleep(100 * time.Millisecond)
	p2 := dial(t, addr)
	mustProduce(p2, topic, 0, plain(3, 10).encode()) // 10-12
	select {
	case resp = <-done:
	case <-time.After(9 * time.Second):
		t.Fatal("the long poll was not answered by a produce")
	}
	if got, _ := acquired(resp, 0); got != "10-12@1" || time.Since(start) > 9*time.Second {
		t.Fatalf("long poll acquired %q", got)
	}

	// Another member on another connection; a's connection closes
	// holding 10-12: they go to b at delivery count 2.
	c2 := dial(t, addr)
	join(c2, "b")
	resp = fetch(c2, shareFetchReq(g, "b", 0, id, 0, 0))
	if got, _ := acquired(resp, 0); got != "" {
		t.Fatalf("b acquired %q while a holds everything", got)
	}
	c.nc.Close()
	deadline := time.Now().Add(10 * time.Second)
	epoch := int32(1)
	for {
		resp = fetch(c2, shareFetchReq(g, "b", epoch, id, 500))
		epoch++
		if got, _ := acquired(resp, 0); got == "10-12@2" {
			break
		} else if got != "" || time.Now().After(deadline) {
			t.Fatalf("after a's connection closed b acquired %q (want 10-12@2)", got)
		}
	}
	// b closes its session with an acceptance: nothing is left to
	// deliver, and a new session finds nothing.
	resp = fetch(c2, withAcks(shareFetchReq(g, "b", -1, id, 0), id, 0, 10, 12, 1))
	if _, p := acquired(resp, 0); resp.ErrorCode != 0 || p == nil || p.AcknowledgeErrorCode != 0 {
		t.Fatalf("closing: %v %+v", codeName(resp.ErrorCode), p)
	}
	resp = fetch(c2, shareFetchReq(g, "b", 0, id, 200, 0))
	if got, _ := acquired(resp, 0); got != "" {
		t.Fatalf("a new session acquired %q after everything was settled", got)
	}

	// FindCoordinator for a share partition's key (KIP-932).
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType = 2
	fc.CoordinatorKeys = []string{g + ":" + base64.RawURLEncoding.EncodeToString(id[:]) + ":0", "not-a-key"}
	fr := roundTrip[*kmsg.FindCoordinatorResponse](c2, 6, fc)
	wantCode(t, "share coordinator", fr.Coordinators[0].ErrorCode, nil)
	wantCode(t, "a bad share key", fr.Coordinators[1].ErrorCode, kerr.InvalidRequest)
	if fr.Coordinators[0].NodeID < 0 || fr.Coordinators[0].Port <= 0 {
		t.Errorf("share coordinator %+v", fr.Coordinators[0])
	}
}

// TestShareSessionLimit: a node keeps at most MaxShareSessions share
// sessions (Kafka's group.share.max.share.sessions): one more member's
// ShareFetch opening a session gets SHARE_SESSION_LIMIT_REACHED and
// holds nothing; a member starting its own session over is not refused;
// a session closed (-1) makes room.
func TestShareSessionLimit(t *testing.T) {
	addr := testkit.StartNode(t, node.Config{MaxShareSessions: 2, Groups: coordinator.Config{InitialRebalanceDelay: -1, ShareMaxSize: 2}}).KafkaAddr()
	c := dial(t, addr)
	const topic, g = "share-limit", "sl"
	id := createTopic(c, topic, 1, nil)
	open := func(member string) int16 {
		hb := roundTrip[*kmsg.ShareGroupHeartbeatResponse](c, 1, shareJoinReq(g, member, topic))
		if hb.ErrorCode != 0 && hb.ErrorCode != kerr.GroupMaxSizeReached.Code {
			t.Fatalf("join %s: %v", member, codeName(hb.ErrorCode))
		}
		return roundTrip[*kmsg.ShareFetchResponse](c, 2, shareFetchReq(g, member, 0, id, 0, 0)).ErrorCode
	}
	wantCode(t, "a", open("a"), nil)
	wantCode(t, "b", open("b"), nil)
	wantCode(t, "a again", open("a"), nil)
	// A third member of another group: over the node's limit.
	hb := roundTrip[*kmsg.ShareGroupHeartbeatResponse](c, 1, shareJoinReq("sl2", "c", topic))
	wantCode(t, "join sl2", hb.ErrorCode, nil)
	wantCode(t, "c", roundTrip[*kmsg.ShareFetchResponse](c, 2, shareFetchReq("sl2", "c", 0, id, 0, 0)).ErrorCode, kerr.ShareSessionLimitReached)
	wantCode(t, "a closes", roundTrip[*kmsg.ShareFetchResponse](c, 2, shareFetchReq(g, "a", -1, id, 0)).ErrorCode, nil)
	wantCode(t, "c after a closed", roundTrip[*kmsg.ShareFetchResponse](c, 2, shareFetchReq("sl2", "c", 0, id, 0, 0)).ErrorCode, nil)
}
