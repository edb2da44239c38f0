package e2e

// Consumer groups seen from outside: franz-go's admin client (kadm) over a
// live group, a member that stops heartbeating, and static members that
// restart. The tests follow Kafka where franz-go's kfake differs from it
// (docs/kafka-classic-groups.md §21).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// gaAdmin is a plain client on addr with its admin wrapper, closed when
// the test ends. It partitions records manually.
func gaAdmin(t *testing.T, addr string) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

// gaProduce writes counts[p] records to each partition p of topic and
// returns when all are acknowledged. Values are "<topic>/<p>/<i>".
func gaProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, counts []int) {
	t.Helper()
	var rs []*kgo.Record
	for p, n := range counts {
		for i := range n {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(p), Value: fmt.Appendf(nil, "%s/%d/%d", topic, p, i)})
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// gaEventually waits up to timeout for cond, which also describes what
// it saw; on timeout the test fails with the last description. Like
// testkit.Eventually it polls at a short, growing interval.
func gaEventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	wait := time.Millisecond
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %s; last seen: %s", timeout, what, last)
		}
		time.Sleep(wait)
		if wait < 100*time.Millisecond {
			wait *= 2
		}
	}
}

// gaMember is a franz-go group consumer of one topic with the partitions
// it owns, tracked from its assignment callbacks.
type gaMember struct {
	cl        *kgo.Client
	topic     string
	closeOnce sync.Once

	mu     sync.Mutex
	owned  map[int32]bool
	events int // callbacks that assigned, revoked or lost partitions
}

// gaJoin starts a consumer in group on topic that never commits by
// itself; it is closed (leaving the group) when the test ends unless
// closed before.
func gaJoin(t *testing.T, addr, group, topic string, opts ...kgo.Opt) *gaMember {
	t.Helper()
	m := &gaMember{topic: topic, owned: map[int32]bool{}}
	change := func(ps map[string][]int32, own bool) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if len(ps[topic]) > 0 {
			m.events++
		}
		for _, p := range ps[topic] {
			if own {
				m.owned[p] = true
			} else {
				delete(m.owned, p)
			}
		}
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { change(ps, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { change(ps, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { change(ps, false) }),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	t.Cleanup(m.close)
	return m
}

func (m *gaMember) close() { m.closeOnce.Do(m.cl.Close) }

// ownedList is the partitions m owns, sorted.
func (m *gaMember) ownedList() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []int32
	for p := range m.owned {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

func (m *gaMember) eventCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.events
}

// gaPartition checks that the members own disjoint partitions covering
// 0..n-1, each member exactly want[i] of them, and describes what they own.
func gaPartition(n int, want []int, ms ...*gaMember) (bool, string) {
	seen := map[int32]int{}
	ok := true
	var desc []string
	for i, m := range ms {
		own := m.ownedList()
		desc = append(desc, fmt.Sprint(own))
		if len(own) != want[i] {
			ok = false
		}
		for _, p := range own {
			seen[p]++
		}
	}
	for p := range int32(n) {
		if seen[p] != 1 {
			ok = false
		}
	}
	return ok && len(seen) == n, "members own " + strings.Join(desc, " ")
}

// gaDescribe describes one group, failing the test if the request fails.
func gaDescribe(t *testing.T, ctx context.Context, adm *kadm.Client, group string) kadm.DescribedGroup {
	t.Helper()
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("describe group %s: %v", group, err)
	}
	d, ok := ds[group]
	if !ok {
		t.Fatalf("describe group %s: not in the response", group)
	}
	return d
}

// gaAssigned is what a described member was assigned of topic, sorted.
func gaAssigned(m kadm.DescribedGroupMember, topic string) []int32 {
	a, ok := m.Assigned.AsConsumer()
	if !ok {
		return nil
	}
	var ps []int32
	for _, at := range a.Topics {
		if at.Topic == topic {
			ps = append(ps, at.Partitions...)
		}
	}
	slices.Sort(ps)
	return ps
}

func gaDescribeString(d kadm.DescribedGroup, topic string) string {
	var ms []string
	for _, m := range d.Members {
		inst := ""
		if m.InstanceID != nil {
			inst = *m.InstanceID + "="
		}
		ms = append(ms, fmt.Sprintf("%s%s%v", inst, m.MemberID, gaAssigned(m, topic)))
	}
	return fmt.Sprintf("state %q err %v, %d members %s", d.State, d.Err, len(d.Members), strings.Join(ms, " "))
}

// gaConn is a bare Kafka connection: requests go out exactly as built and
// responses come back undecorated, with no retries, version negotiation
// or coordinator lookup in the way. Every read and write has a deadline.
type gaConn struct {
	nc   net.Conn
	br   *bufio.Reader
	f    *kmsg.RequestFormatter
	corr int32
}

const gaIOTimeout = 30 * time.Second

func gaDial(addr, clientID string) (*gaConn, error) {
	nc, err := net.DialTimeout("tcp", addr, gaIOTimeout)
	if err != nil {
		return nil, err
	}
	return &gaConn{nc: nc, br: bufio.NewReader(nc), f: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}, nil
}

// gaMustDial dials addr and closes the connection when the test ends.
func gaMustDial(t *testing.T, addr, clientID string) *gaConn {
	t.Helper()
	c, err := gaDial(addr, clientID)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.nc.Close() })
	return c
}

// send writes req at its set version and returns its correlation id.
func (c *gaConn) send(req kmsg.Request) (int32, error) {
	c.corr++
	b := c.f.AppendRequest(nil, req, c.corr)
	c.nc.SetWriteDeadline(time.Now().Add(gaIOTimeout))
	_, err := c.nc.Write(b)
	return c.corr, err
}

// recv reads the response to req, sent with correlation id corr.
func (c *gaConn) recv(req kmsg.Request, corr int32) (kmsg.Response, error) {
	c.nc.SetReadDeadline(time.Now().Add(gaIOTimeout))
	f, err := readFrame(c.br)
	if err != nil {
		return nil, err
	}
	if len(f) < 8 {
		return nil, fmt.Errorf("short response frame of %d bytes", len(f))
	}
	if got := int32(uint32(f[4])<<24 | uint32(f[5])<<16 | uint32(f[6])<<8 | uint32(f[7])); got != corr {
		return nil, fmt.Errorf("%s: response correlation id %d, want %d", kmsg.NameForKey(req.Key()), got, corr)
	}
	body := f[8:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		if len(body) == 0 || body[0] != 0 {
			return nil, fmt.Errorf("%s: bad response header tags", kmsg.NameForKey(req.Key()))
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%s v%d: response does not decode: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

func (c *gaConn) do(req kmsg.Request) (kmsg.Response, error) {
	corr, err := c.send(req)
	if err != nil {
		return nil, err
	}
	return c.recv(req, corr)
}

// gaDo sends req at version v on c and returns the typed response,
// failing the test on any I/O or decoding error.
func gaDo[R kmsg.Response](t *testing.T, c *gaConn, v int16, req kmsg.Request) R {
	t.Helper()
	req.SetVersion(v)
	resp, err := c.do(req)
	if err != nil {
		t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), v, err)
	}
	r, ok := resp.(R)
	if !ok {
		t.Fatalf("%s: unexpected response type %T", kmsg.NameForKey(req.Key()), resp)
	}
	return r
}

// gaMemberCommit commits offset 0 of partition 0 of topic as the given
// member (v7, with the instance id if any) and returns the error code.
func gaMemberCommit(t *testing.T, c *gaConn, group, memberID string, instance *string, gen int32, topic string) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.InstanceID, req.Generation = group, memberID, instance, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := gaDo[*kmsg.OffsetCommitResponse](t, c, 7, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("offset commit: unexpected response %+v", resp)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestGroupAdminKadm drives franz-go's admin client over groups: a simple
// group made by offset commits alone, a live group of three consumers, and
// both after the consumers leave. It checks ListGroups with state filters,
// DescribeGroups (state, protocol, members with client id, host and
// decoded subscriptions and assignments), FetchOffsets, exact Lag,
// DeleteOffsets on subscribed and unsubscribed topics, DeleteGroups on an
// active, an empty and an unknown group, and an admin commit to a live
// group (docs/kafka-classic-groups.md §11, §13, §15-17).
func TestGroupAdminKadm(t *testing.T) {
	const (
		sub    = "adm-sub"   // the live group consumes this topic
		other  = "adm-other" // and only commits to this one
		live   = "adm-live"
		simple = "adm-simple"
		nope   = "adm-nope"
	)
	addr := startGroupNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, adm := gaAdmin(t, addr)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, sub); err != nil {
		t.Fatalf("create %s: %v", sub, err)
	}
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, other); err != nil {
		t.Fatalf("create %s: %v", other, err)
	}
	gaProduce(t, ctx, cl, sub, []int{10, 20, 30})
	gaProduce(t, ctx, cl, other, []int{5, 5})

	fetched := func(group string) map[string]map[int32]int64 {
		t.Helper()
		fo, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatalf("fetch offsets of %s: %v", group, err)
		}
		if err := fo.Error(); err != nil {
			t.Fatalf("fetch offsets of %s: %v", group, err)
		}
		out := map[string]map[int32]int64{}
		fo.Each(func(o kadm.OffsetResponse) {
			if out[o.Topic] == nil {
				out[o.Topic] = map[int32]int64{}
			}
			out[o.Topic][o.Partition] = o.At
		})
		return out
	}
	expectOffsets := func(group string, want map[string]map[int32]int64) {
		t.Helper()
		if got := fetched(group); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("committed offsets of %s: %v, want %v", group, got, want)
		}
	}
	listed := func(states ...string) kadm.ListedGroups {
		t.Helper()
		ls, err := adm.ListGroups(ctx, states...)
		if err != nil {
			t.Fatalf("list groups %v: %v", states, err)
		}
		return ls
	}

	// An admin commit to a group that does not exist creates it: an Empty
	// simple group, with no protocol type and no members.
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: other, Partition: 0, At: 3, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: other, Partition: 1, At: 5, LeaderEpoch: -1, Metadata: "simple"})
	if r, err := adm.CommitOffsets(ctx, simple, offs); err != nil || r.Error() != nil {
		t.Fatalf("commit to %s: %v %v", simple, err, r.Error())
	}
	if g, ok := listed()[simple]; !ok || g.State != "Empty" || g.ProtocolType != "" {
		t.Errorf("ListGroups: %s is %+v (listed %v), want state Empty, no protocol type", simple, g, ok)
	}
	if d := gaDescribe(t, ctx, adm, simple); d.Err != nil || d.State != "Empty" || d.ProtocolType != "" || d.Protocol != "" || len(d.Members) != 0 {
		t.Errorf("DescribeGroups %s: %s, protocol %q/%q, want Empty with no protocol and no members", simple, gaDescribeString(d, other), d.ProtocolType, d.Protocol)
	}
	expectOffsets(simple, map[string]map[int32]int64{other: {0: 3, 1: 5}})

	// Three consumers form a Stable group, one partition each.
	var ms []*gaMember
	for i := range 3 {
		ms = append(ms, gaJoin(t, addr, live, sub, kgo.ClientID(fmt.Sprintf("adm-c%d", i))))
	}
	var d kadm.DescribedGroup
	gaEventually(t, 30*time.Second, "3 members in a Stable group, one partition each", func() (bool, string) {
		if ok, s := gaPartition(3, []int{1, 1, 1}, ms...); !ok {
			return false, s
		}
		d = gaDescribe(t, ctx, adm, live)
		if d.State != "Stable" || len(d.Members) != 3 {
			return false, gaDescribeString(d, sub)
		}
		for _, m := range d.Members {
			if len(gaAssigned(m, sub)) != 1 {
				return false, gaDescribeString(d, sub)
			}
		}
		return true, ""
	})
	if d.Err != nil || d.ProtocolType != "consumer" || d.Protocol != "cooperative-sticky" {
		t.Errorf("DescribeGroups %s: error %v, protocol %q/%q, want consumer/cooperative-sticky (franz-go's default)", live, d.Err, d.ProtocolType, d.Protocol)
	}
	// With no authorizer every group operation is allowed (§15: 3400).
	if got, want := fmt.Sprint(d.AuthorizedOperations), fmt.Sprint(kadm.DecodeACLOperations(3400)); got != want {
		t.Errorf("DescribeGroups %s: authorized operations %s, want %s", live, got, want)
	}
	var clientIDs []string
	assigned := map[int32]string{} // partition → client id, from DescribeGroups
	for _, m := range d.Members {
		clientIDs = append(clientIDs, m.ClientID)
		if !strings.HasPrefix(m.MemberID, m.ClientID+"-") || m.InstanceID != nil {
			t.Errorf("member %q of client %q (instance %v): want a dynamic member id \"<client id>-<uuid>\"", m.MemberID, m.ClientID, m.InstanceID)
		}
		if m.ClientHost != "/127.0.0.1" {
			t.Errorf("member %s: client host %q, want /127.0.0.1", m.MemberID, m.ClientHost)
		}
		if j, ok := m.Join.AsConsumer(); !ok || !slices.Equal(j.Topics, []string{sub}) {
			t.Errorf("member %s: subscription %+v, want topics [%s]", m.MemberID, j, sub)
		}
		for _, p := range gaAssigned(m, sub) {
			assigned[p] = m.ClientID
		}
	}
	sort.Strings(clientIDs)
	if !slices.Equal(clientIDs, []string{"adm-c0", "adm-c1", "adm-c2"}) {
		t.Errorf("client ids %v, want adm-c0..2", clientIDs)
	}
	for i, m := range ms {
		for _, p := range m.ownedList() {
			if assigned[p] != fmt.Sprintf("adm-c%d", i) {
				t.Errorf("adm-c%d consumes %s/%d, but DescribeGroups assigns it to %q", i, sub, p, assigned[p])
			}
		}
	}

	// State filters, in any case.
	for _, f := range []string{"Stable", "stable", "STABLE"} {
		ls := listed(f)
		if _, ok := ls[live]; !ok {
			t.Errorf("ListGroups(%q) lacks %s: %v", f, live, ls.Groups())
		}
		if _, ok := ls[simple]; ok {
			t.Errorf("ListGroups(%q) lists the Empty group %s", f, simple)
		}
	}
	if ls := listed("Empty"); !gaHasGroup(ls, simple) || gaHasGroup(ls, live) {
		t.Errorf("ListGroups(Empty) = %v, want %s and not %s", ls.Groups(), simple, live)
	}
	if ls := listed("Dead"); len(ls) != 0 {
		t.Errorf("ListGroups(Dead) = %v, want none", ls.Groups())
	}
	if g := listed()[live]; g.State != "Stable" || g.ProtocolType != "consumer" {
		t.Errorf("ListGroups: %s is %+v, want Stable consumer", live, g)
	}

	// A member commits, with its generation, to the subscribed topic and
	// to another one.
	var commitErr error
	ms[0].cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{
		sub:   {0: {Epoch: -1, Offset: 4}, 1: {Epoch: -1, Offset: 7}, 2: {Epoch: -1, Offset: 30}},
		other: {0: {Epoch: -1, Offset: 2}, 1: {Epoch: -1, Offset: 1}},
	}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			commitErr = err
			return
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil && commitErr == nil {
					commitErr = fmt.Errorf("%s/%d: %w", rt.Topic, rp.Partition, err)
				}
			}
		}
	})
	if commitErr != nil {
		t.Fatalf("member commit: %v", commitErr)
	}
	wantLive := map[string]map[int32]int64{sub: {0: 4, 1: 7, 2: 30}, other: {0: 2, 1: 1}}
	expectOffsets(live, wantLive)

	// An admin commit (no generation, no member) to the live group is
	// refused with UNKNOWN_MEMBER_ID and changes nothing.
	var adminOs kadm.Offsets
	adminOs.Add(kadm.Offset{Topic: sub, Partition: 0, At: 1, LeaderEpoch: -1})
	r, err := adm.CommitOffsets(ctx, live, adminOs)
	if err != nil {
		t.Fatalf("admin commit to %s: %v", live, err)
	}
	if o, ok := r.Lookup(sub, 0); !ok || !errors.Is(o.Err, kerr.UnknownMemberID) {
		t.Errorf("admin commit to the Stable group %s: %+v, want UNKNOWN_MEMBER_ID", live, o)
	}
	expectOffsets(live, wantLive)

	// Lag: end offset minus commit, the member that owns the partition.
	checkLag := func(wantMembers bool, want map[string]map[int32]int64) {
		t.Helper()
		lags, err := adm.Lag(ctx, live)
		if err != nil {
			t.Fatalf("lag: %v", err)
		}
		l := lags[live]
		if err := l.Error(); err != nil {
			t.Fatalf("lag of %s: %v", live, err)
		}
		got := map[string]map[int32]int64{}
		for topic, ps := range l.Lag {
			for p, ml := range ps {
				if ml.Err != nil {
					t.Errorf("lag %s/%d: %v", topic, p, ml.Err)
				}
				if got[topic] == nil {
					got[topic] = map[int32]int64{}
				}
				got[topic][p] = ml.Lag
				owner := ""
				if ml.Member != nil {
					owner = ml.Member.ClientID
				}
				switch {
				case !wantMembers && owner != "":
					t.Errorf("lag %s/%d: member %q in an Empty group", topic, p, owner)
				case wantMembers && topic == sub && owner != assigned[p]:
					t.Errorf("lag %s/%d: member %q, want %q", topic, p, owner, assigned[p])
				case topic == other && owner != "":
					t.Errorf("lag %s/%d: member %q for a topic nobody consumes", topic, p, owner)
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("lag of %s: %v, want %v", live, got, want)
		}
	}
	checkLag(true, map[string]map[int32]int64{sub: {0: 6, 1: 13, 2: 0}, other: {0: 3, 1: 4}})

	// Offsets of a topic the group does not consume can be deleted; those
	// of its subscribed topic cannot while it is active.
	del, err := adm.DeleteOffsets(ctx, live, kadm.TopicsSet{other: {0: {}, 1: {}}})
	if err != nil {
		t.Fatalf("delete offsets of %s: %v", other, err)
	}
	for p := range int32(2) {
		if e, ok := del[other][p]; !ok || e != nil {
			t.Errorf("delete offset %s/%d: %v (in response %v), want deleted", other, p, e, ok)
		}
	}
	del, err = adm.DeleteOffsets(ctx, live, kadm.TopicsSet{sub: {0: {}}})
	if err != nil {
		t.Fatalf("delete offsets of %s: %v", sub, err)
	}
	if e := del[sub][0]; !errors.Is(e, kerr.GroupSubscribedToTopic) {
		t.Errorf("delete offset %s/0 of the subscribed topic: %v, want GROUP_SUBSCRIBED_TO_TOPIC", sub, e)
	}
	wantLive = map[string]map[int32]int64{sub: {0: 4, 1: 7, 2: 30}}
	expectOffsets(live, wantLive)
	if _, err := adm.DeleteOffsets(ctx, nope, kadm.TopicsSet{other: {0: {}}}); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Errorf("delete offsets of the unknown group %s: %v, want GROUP_ID_NOT_FOUND", nope, err)
	}

	// An active group cannot be deleted; an unknown one is not found.
	dr, err := adm.DeleteGroups(ctx, live, nope)
	if err != nil {
		t.Fatalf("delete groups: %v", err)
	}
	if !errors.Is(dr[live].Err, kerr.NonEmptyGroup) {
		t.Errorf("delete the Stable group %s: %v, want NON_EMPTY_GROUP", live, dr[live].Err)
	}
	if !errors.Is(dr[nope].Err, kerr.GroupIDNotFound) {
		t.Errorf("delete the unknown group %s: %v, want GROUP_ID_NOT_FOUND", nope, dr[nope].Err)
	}
	// kadm negotiates DeleteGroups v3, whose failed deletions say why.
	if dr[live].ErrMessage != "The group is not empty." || dr[nope].ErrMessage != "The group id does not exist." {
		t.Errorf("delete groups v3: messages %q and %q, want the errors' descriptions", dr[live].ErrMessage, dr[nope].ErrMessage)
	}

	// The members leave (LeaveGroup on close): the group is Empty, keeps
	// its protocol type and its offsets, and lag has no members.
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(m.close)
	}
	wg.Wait()
	gaEventually(t, 30*time.Second, "the group Empty after its members left", func() (bool, string) {
		d := gaDescribe(t, ctx, adm, live)
		return d.State == "Empty" && len(d.Members) == 0, gaDescribeString(d, sub)
	})
	if d := gaDescribe(t, ctx, adm, live); d.ProtocolType != "consumer" || d.Protocol != "" {
		t.Errorf("Empty %s: protocol %q/%q, want type consumer kept and no protocol", live, d.ProtocolType, d.Protocol)
	}
	if g := listed("empty")[live]; g.State != "Empty" || g.ProtocolType != "consumer" {
		t.Errorf("ListGroups(empty): %s is %+v, want Empty consumer", live, g)
	}
	expectOffsets(live, wantLive)
	checkLag(false, map[string]map[int32]int64{sub: {0: 6, 1: 13, 2: 0}})

	// Empty groups are deleted with their offsets.
	dr, err = adm.DeleteGroups(ctx, live, simple)
	if err != nil {
		t.Fatalf("delete groups: %v", err)
	}
	for _, g := range []string{live, simple} {
		if dr[g].Err != nil || dr[g].ErrMessage != "" {
			t.Errorf("delete the Empty group %s: %v %q", g, dr[g].Err, dr[g].ErrMessage)
		}
	}
	if ls := listed(); gaHasGroup(ls, live) || gaHasGroup(ls, simple) {
		t.Errorf("ListGroups after deletion: %v", ls.Groups())
	}
	expectOffsets(live, map[string]map[int32]int64{})
	expectOffsets(simple, map[string]map[int32]int64{})
	if d := gaDescribe(t, ctx, adm, live); d.State != "Dead" || len(d.Members) != 0 || !errors.Is(d.Err, kerr.GroupIDNotFound) {
		t.Errorf("DescribeGroups of the deleted %s: %s, want Dead and GROUP_ID_NOT_FOUND (v6)", live, gaDescribeString(d, sub))
	}
	if dr, err := adm.DeleteGroups(ctx, live); err != nil || !errors.Is(dr[live].Err, kerr.GroupIDNotFound) {
		t.Errorf("delete %s again: %v %v, want GROUP_ID_NOT_FOUND", live, err, dr[live].Err)
	}
}

func gaHasGroup(ls kadm.ListedGroups, g string) bool {
	_, ok := ls[g]
	return ok
}

// TestGroupSessionExpiry: two franz-go consumers and a raw member share
// six partitions; the raw member joins, syncs, and then goes quiet with
// its connection open: no heartbeat, no LeaveGroup. Once its 2 s session
// timeout has passed the coordinator removes it and the two consumers own
// all six partitions (docs/kafka-classic-groups.md §10). The consumers use
// the eager range assignor, so one rebalance moves everything.
func TestGroupSessionExpiry(t *testing.T) {
	const (
		topic   = "expiry"
		group   = "expiry-g"
		session = 2 * time.Second
	)
	addr := startGroupNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, adm := gaAdmin(t, addr)
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	opts := []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(30 * time.Second)}
	a := gaJoin(t, addr, group, topic, append(opts, kgo.ClientID("expiry-a"))...)
	b := gaJoin(t, addr, group, topic, append(opts, kgo.ClientID("expiry-b"))...)
	gaEventually(t, 30*time.Second, "two consumers with three partitions each", func() (bool, string) {
		return gaPartition(6, []int{3, 3}, a, b)
	})

	// The raw member: JoinGroup (v9: MEMBER_ID_REQUIRED, then again with
	// the id), parked until the consumers rejoin, then SyncGroup.
	c := gaMustDial(t, addr, "expiry-raw")
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 1
	meta.Topics = []string{topic}
	var (
		memberID string
		gen      int32
		mine     []int32
	)
	for attempt := 0; mine == nil; attempt++ {
		if attempt == 5 {
			t.Fatal("the raw member got no assignment in 5 join rounds")
		}
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.MemberID, join.ProtocolType = group, memberID, "consumer"
		join.SessionTimeoutMillis = int32(session / time.Millisecond)
		join.RebalanceTimeoutMillis = 20000
		proto := kmsg.NewJoinGroupRequestProtocol()
		proto.Name, proto.Metadata = "range", meta.AppendTo(nil)
		join.Protocols = append(join.Protocols, proto)
		jr := gaDo[*kmsg.JoinGroupResponse](t, c, 9, join)
		switch err := kerr.ErrorForCode(jr.ErrorCode); {
		case errors.Is(err, kerr.MemberIDRequired) && memberID == "":
			memberID = jr.MemberID
			continue
		case err != nil:
			t.Fatalf("raw join (member %q): %v", memberID, err)
		}
		if jr.MemberID != memberID || jr.LeaderID == memberID || jr.Protocol == nil || *jr.Protocol != "range" {
			t.Fatalf("raw join: member %q leader %q protocol %v; want our id %q, a consumer as leader (it was there first and rejoined), range", jr.MemberID, jr.LeaderID, jr.Protocol, memberID)
		}
		gen = jr.Generation
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.Generation, sync.MemberID = group, gen, memberID
		sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		sr := gaDo[*kmsg.SyncGroupResponse](t, c, 5, sync)
		switch err := kerr.ErrorForCode(sr.ErrorCode); {
		case errors.Is(err, kerr.RebalanceInProgress):
			continue
		case err != nil:
			t.Fatalf("raw sync: %v", err)
		}
		var asg kmsg.ConsumerMemberAssignment
		if err := asg.ReadFrom(sr.MemberAssignment); err != nil {
			t.Fatalf("raw sync: assignment %x does not decode: %v", sr.MemberAssignment, err)
		}
		mine = []int32{}
		for _, at := range asg.Topics {
			if at.Topic == topic {
				mine = append(mine, at.Partitions...)
			}
		}
	}
	quietAt := time.Now()
	slices.Sort(mine)
	if len(mine) != 2 {
		t.Fatalf("the raw member was assigned %v, want 2 of the 6 partitions", mine)
	}
	if d := gaDescribe(t, ctx, adm, group); d.State != "Stable" || len(d.Members) != 3 {
		t.Fatalf("after the raw member synced: %s, want Stable with 3 members", gaDescribeString(d, topic))
	}
	t.Logf("raw member %s has %v in generation %d; going quiet", memberID, mine, gen)

	// Now the raw member is silent. The consumers get all six partitions
	// back once its session expires, and not before.
	gaEventually(t, 15*time.Second, "the consumers own all six partitions, the raw member gone", func() (bool, string) {
		if ok, s := gaPartition(6, []int{3, 3}, a, b); !ok {
			return false, s
		}
		d := gaDescribe(t, ctx, adm, group)
		if d.State != "Stable" || len(d.Members) != 2 {
			return false, gaDescribeString(d, topic)
		}
		for _, m := range d.Members {
			if m.MemberID == memberID {
				return false, gaDescribeString(d, topic)
			}
		}
		return true, ""
	})
	took := time.Since(quietAt)
	if took < session-250*time.Millisecond {
		t.Errorf("the raw member was removed %v after its last request; its session timeout is %v", took, session)
	}
	t.Logf("the raw member was removed and its partitions reassigned %v after it went quiet", took.Round(time.Millisecond))

	// It is no longer a member.
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = group, gen, memberID
	if r := gaDo[*kmsg.HeartbeatResponse](t, c, 4, hb); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("heartbeat of the expired member: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(r.ErrorCode))
	}
}

// TestStaticMemberRestart: three static members (group.instance.id) share
// six partitions. Each in turn is closed, which for a static member sends
// no LeaveGroup, and replaced within its session timeout by a new client
// with the same instance id. The replacement gets a new member id and the
// same partitions in the same generation, and the others are not
// rebalanced (docs/kafka-classic-groups.md §9). One of the three is the
// leader, whose replacement gets SkipAssignment (KIP-814).
//
// The members use the range assignor, which orders static members by
// instance id, so the restarted leader's own plan equals the stored one.
// (franz-go's leader recomputes the plan even when told to skip the
// assignment and rejoins, forcing a rebalance, if its share differs; with
// cooperative-sticky that depends on the owned partitions each member last
// sent, which is the client's business, not the coordinator's.)
func TestStaticMemberRestart(t *testing.T) {
	const (
		topic = "static"
		group = "static-g"
	)
	addr := startGroupNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, adm := gaAdmin(t, addr)
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	join := func(i int) *gaMember {
		return gaJoin(t, addr, group, topic, kgo.InstanceID(fmt.Sprintf("static-%d", i)),
			kgo.ClientID(fmt.Sprintf("static-c%d", i)), kgo.SessionTimeout(20*time.Second),
			kgo.Balancers(kgo.RangeBalancer()))
	}
	ms := []*gaMember{join(0), join(1), join(2)}
	gaEventually(t, 30*time.Second, "three static members with two partitions each", func() (bool, string) {
		if ok, s := gaPartition(6, []int{2, 2, 2}, ms...); !ok {
			return false, s
		}
		d := gaDescribe(t, ctx, adm, group)
		return d.State == "Stable" && len(d.Members) == 3, gaDescribeString(d, topic)
	})
	_, gen := ms[0].cl.GroupMetadata()
	for i, m := range ms {
		if _, g := m.cl.GroupMetadata(); g != gen {
			t.Fatalf("member %d is in generation %d, member 0 in %d", i, g, gen)
		}
	}
	raw := gaMustDial(t, addr, "static-raw")

	for i := range ms {
		old := ms[i]
		inst := fmt.Sprintf("static-%d", i)
		oldID, _ := old.cl.GroupMetadata()
		owned := old.ownedList()
		events := make([]int, len(ms))
		for j, m := range ms {
			events[j] = m.eventCount()
		}
		old.close()

		// No LeaveGroup: the coordinator still has the old member.
		d := gaDescribe(t, ctx, adm, group)
		if m, ok := gaInstance(d, inst); d.State != "Stable" || len(d.Members) != 3 || !ok || m.MemberID != oldID {
			t.Fatalf("after closing static member %s: %s, want it still in the Stable group as %s", inst, gaDescribeString(d, topic), oldID)
		}

		nm := join(i)
		ms[i] = nm
		gaEventually(t, 30*time.Second, fmt.Sprintf("the new %s owns %v", inst, owned), func() (bool, string) {
			own := nm.ownedList()
			return slices.Equal(own, owned), fmt.Sprintf("it owns %v", own)
		})
		newID, newGen := nm.cl.GroupMetadata()
		if newGen != gen || newID == oldID || !strings.HasPrefix(newID, inst+"-") {
			t.Errorf("replacement of %s: member %s generation %d; want a new id \"%s-<uuid>\" in the unchanged generation %d (old member %s)", inst, newID, newGen, inst, gen, oldID)
		}
		d = gaDescribe(t, ctx, adm, group)
		if m, ok := gaInstance(d, inst); d.State != "Stable" || len(d.Members) != 3 || !ok || m.MemberID != newID || !slices.Equal(gaAssigned(m, topic), owned) {
			t.Errorf("after replacing %s: %s, want Stable with 3 members, %s as %s with %v", inst, gaDescribeString(d, topic), inst, newID, owned)
		}
		// The coordinator's generation is unchanged and the instance
		// maps to the new member id: a commit as the new member in the
		// old generation is accepted, one as the old member is fenced.
		if e := gaMemberCommit(t, raw, group, newID, &inst, gen, topic); e != 0 {
			t.Errorf("commit as the replacement %s in generation %d: %v", newID, gen, kerr.ErrorForCode(e))
		}
		if e := gaMemberCommit(t, raw, group, oldID, &inst, gen, topic); e != kerr.FencedInstanceID.Code {
			t.Errorf("commit as the replaced %s: %v, want FENCED_INSTANCE_ID", oldID, kerr.ErrorForCode(e))
		}
		for j, m := range ms {
			if j == i {
				continue
			}
			if n := m.eventCount(); n != events[j] {
				t.Errorf("replacing %s rebalanced static-%d: %d assignment changes, before %d", inst, j, n, events[j])
			}
			if _, g := m.cl.GroupMetadata(); g != gen {
				t.Errorf("replacing %s moved static-%d to generation %d from %d", inst, j, g, gen)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	if ok, s := gaPartition(6, []int{2, 2, 2}, ms...); !ok {
		t.Errorf("after all restarts: %s", s)
	}
}

// gaInstance finds the member of d with instance id inst.
func gaInstance(d kadm.DescribedGroup, inst string) (kadm.DescribedGroupMember, bool) {
	for _, m := range d.Members {
		if m.InstanceID != nil && *m.InstanceID == inst {
			return m, true
		}
	}
	return kadm.DescribedGroupMember{}, false
}
