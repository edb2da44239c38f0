package e2e

// The warm-handoff assignment service end to end: grpc-go clients
// generated from kafka-assigner's .proto, over TCP on 127.0.0.1, against
// the real server (in process, and the real binary for SIGKILL).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/assigner"
	"github.com/cohort-dev/cohort/assigner/kafkaassignerpb"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

const assignerWait = 30 * time.Second

// akConsumer is a kafka-assigner client: it registers, keeps what it
// owns from the stream's commands, warms what it is told to (at once, or
// when the test allows), and releases what it is told to.
type akConsumer struct {
	t      *testing.T
	name   string
	group  string
	client kafkaassignerpb.KafkaAssignerClient
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	owned   map[uint32]bool
	warming map[uint32]string // partition → current owner
	// saidReady holds the partitions the consumer has said ready for and
	// not yet been assigned: it is warm and takes them over as soon as
	// the service has made it their owner, which the service does before
	// it tells their old owner to release them. (The new owner's
	// Assignment and the old owner's Release are sent at once, on two
	// streams: either may arrive first.)
	saidReady map[uint32]bool
	warms     int // warm commands received
	releases  int
	first     *kafkaassignerpb.AssignmentUpdate
	holdWarm  bool // do not say ready until allowWarm
	err       error
	// reconnects counts the streams registered again (startAKConsumerOn
	// with reconnect), the first one included.
	reconnects int
	reconnect  bool
	// trace is what the consumer saw and did, timestamped, for the
	// failure message of a test that watches ownership over time.
	trace []string
}

// tracef records an event in c.trace; c.mu is held.
func (c *akConsumer) tracef(format string, args ...any) {
	c.trace = append(c.trace, time.Now().Format("15:04:05.000000")+" "+fmt.Sprintf(format, args...))
}

// traceOf returns the last events of c's trace, one a line.
func (c *akConsumer) traceOf() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	tr := c.trace
	if len(tr) > 80 {
		tr = append([]string{"..."}, tr[len(tr)-80:]...)
	}
	return c.name + ":\n  " + strings.Join(tr, "\n  ")
}

func dialAssigner(t *testing.T, addr string) kafkaassignerpb.KafkaAssignerClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return kafkaassignerpb.NewKafkaAssignerClient(cc)
}

func (c *akConsumer) ctx(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, assigner.GroupMetadataKey, c.group)
}

func startAKConsumer(t *testing.T, addr, group, name, topic string, holdWarm bool) *akConsumer {
	t.Helper()
	return startAKConsumerOn(t, []string{addr}, false, group, name, topic, holdWarm)
}

// startAKConsumerOn starts a consumer on the first of addrs. With
// reconnect, a stream that ends (its node died, or answered UNAVAILABLE)
// is registered again on the next address, round robin, as a
// kafka-assigner consumer behind a load balancer does; the first message
// of each stream is the whole of what it owns.
func startAKConsumerOn(t *testing.T, addrs []string, reconnect bool, group, name, topic string, holdWarm bool) *akConsumer {
	t.Helper()
	clients := make([]kafkaassignerpb.KafkaAssignerClient, len(addrs))
	for i, a := range addrs {
		clients[i] = dialAssigner(t, a)
	}
	c := &akConsumer{t: t, name: name, group: group, client: clients[0], done: make(chan struct{}),
		owned: map[uint32]bool{}, warming: map[uint32]string{}, saidReady: map[uint32]bool{}, holdWarm: holdWarm, reconnect: reconnect}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	t.Cleanup(c.stop)
	stream, err := c.client.Register(c.ctx(ctx), &kafkaassignerpb.RegisterRequest{ConsumerName: name, Topic: topic})
	if err != nil {
		t.Fatalf("%s: register: %v", name, err)
	}
	go func() {
		defer close(c.done)
		deadline := time.Now().Add(5 * time.Minute) // bounded
		for next := 1; ; next++ {
			first := true
			for {
				cmd, err := stream.Recv()
				if err != nil {
					if ctx.Err() == nil && !reconnect {
						c.fail(err)
					}
					c.mu.Lock()
					c.tracef("stream ended: %v", status.Code(err))
					c.mu.Unlock()
					break
				}
				c.mu.Lock()
				if first && reconnect {
					// The new stream's first message (an AssignmentUpdate)
					// says all it owns: forget the old stream's view and
					// take the new one in one step, so that a watcher never
					// sees the consumer owning nothing in between.
					clear(c.owned)
					clear(c.warming)
					clear(c.saidReady)
					c.reconnects++
				}
				c.handleLocked(cmd)
				c.mu.Unlock()
				first = false
			}
			for ctx.Err() == nil && reconnect && time.Now().Before(deadline) {
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
				c.mu.Lock()
				c.client = clients[next%len(clients)]
				cl := c.client
				c.tracef("register on %s", addrs[next%len(clients)])
				c.mu.Unlock()
				if stream, err = cl.Register(c.ctx(ctx), &kafkaassignerpb.RegisterRequest{ConsumerName: name, Topic: topic}); err == nil {
					break
				}
				next++
			}
			if ctx.Err() != nil || !reconnect || stream == nil || time.Now().After(deadline) {
				return
			}
		}
	}()
	return c
}

// handleLocked applies a command from the service; c.mu is held.
func (c *akConsumer) handleLocked(cmd *kafkaassignerpb.AssignmentCommand) {
	c.tracef("got %v", cmd)
	switch x := cmd.Command.(type) {
	case *kafkaassignerpb.AssignmentCommand_Assignment:
		if c.first == nil {
			c.first = x.Assignment
		}
		for _, p := range x.Assignment.GetAssigned() {
			c.owned[p.GetPartition()] = true
			delete(c.warming, p.GetPartition())
			delete(c.saidReady, p.GetPartition())
		}
		for _, p := range x.Assignment.GetUnassigned() {
			delete(c.owned, p.GetPartition())
		}
	case *kafkaassignerpb.AssignmentCommand_Warm:
		c.warms++
		p := x.Warm.GetPartition()
		c.warming[p.GetPartition()] = x.Warm.GetCurrentOwner()
		if !c.holdWarm {
			go c.ready(p)
		}
	case *kafkaassignerpb.AssignmentCommand_Release:
		c.releases++
		p := x.Release.GetPartition()
		delete(c.owned, p.GetPartition())
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), assignerWait)
			defer cancel()
			_, err := c.currentClient().PartitionReleased(c.ctx(ctx), &kafkaassignerpb.PartitionReleasedRequest{ConsumerName: c.name, Partition: p})
			c.mu.Lock()
			c.tracef("released %d: %v", p.GetPartition(), status.Code(err))
			c.mu.Unlock()
			if err != nil {
				c.fail(fmt.Errorf("released %d: %w", p.GetPartition(), err))
			}
		}()
	}
}

// ready says the consumer is ready for p. From the moment it says so it
// holds p (saidReady), until the service assigns it p, or refuses (then
// p stays its old owner's), or a new stream's snapshot says what it has.
// An UNAVAILABLE answer leaves the outcome unknown: it keeps holding p.
func (c *akConsumer) ready(p *kafkaassignerpb.TopicPartition) {
	ctx, cancel := context.WithTimeout(context.Background(), assignerWait)
	defer cancel()
	c.mu.Lock()
	if _, ok := c.warming[p.GetPartition()]; ok {
		c.saidReady[p.GetPartition()] = true
	}
	cl := c.client
	c.mu.Unlock()
	_, err := cl.PartitionReady(c.ctx(ctx), &kafkaassignerpb.PartitionReadyRequest{ConsumerName: c.name, Partition: p})
	c.mu.Lock()
	c.tracef("ready %d: %v", p.GetPartition(), status.Code(err))
	if err != nil && status.Code(err) != codes.Unavailable {
		delete(c.saidReady, p.GetPartition())
	}
	c.mu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("ready %d: %w", p.GetPartition(), err))
	}
}

// currentClient is the client of the node the consumer is registered on.
func (c *akConsumer) currentClient() kafkaassignerpb.KafkaAssignerClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}

func (c *akConsumer) fail(err error) {
	if c.reconnect && status.Code(err) == codes.Unavailable {
		// The node went away or the service is moving: the stream
		// registered again hears the command again.
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

// allowWarm says ready for everything it is warming.
func (c *akConsumer) allowWarm(topic string) {
	c.mu.Lock()
	c.holdWarm = false
	var ps []uint32
	for p := range c.warming {
		ps = append(ps, p)
	}
	c.mu.Unlock()
	for _, p := range ps {
		c.ready(&kafkaassignerpb.TopicPartition{Topic: topic, Partition: p})
	}
}

// waitWarming waits until the consumer is warming n partitions.
func (c *akConsumer) waitWarming(n int) {
	c.t.Helper()
	deadline := time.Now().Add(assignerWait)
	for {
		c.mu.Lock()
		w := len(c.warming)
		c.mu.Unlock()
		if w == n {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s warms %d partitions, want %d", c.name, w, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *akConsumer) firstUpdate() *kafkaassignerpb.AssignmentUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first
}

// stop ends the stream without a goodbye (the connection goes away).
func (c *akConsumer) stop() {
	c.cancel()
	<-c.done
}

// holding returns what the consumer works on now: what it owns, and
// what it has said ready for (see saidReady).
func (c *akConsumer) holding() []uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []uint32
	for p := range c.owned {
		out = append(out, p)
	}
	for p := range c.saidReady {
		out = append(out, p)
	}
	return out
}

func (c *akConsumer) snapshot() (owned []uint32, warming int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range c.owned {
		owned = append(owned, p)
	}
	slices.Sort(owned)
	return owned, len(c.warming), c.err
}

// waitOwned waits until each consumer owns want[i] partitions, no
// partition is owned twice and nothing is warming.
func waitOwned(t *testing.T, cs []*akConsumer, want []int) {
	t.Helper()
	deadline := time.Now().Add(assignerWait)
	for {
		ok, seen, why := true, map[uint32]string{}, ""
		for i, c := range cs {
			owned, warming, err := c.snapshot()
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if len(owned) != want[i] || warming != 0 {
				ok = false
				why = fmt.Sprintf("%s owns %v, warming %d", c.name, owned, warming)
			}
			for _, p := range owned {
				if o, dup := seen[p]; dup {
					ok = false
					why = fmt.Sprintf("partition %d owned by %s and %s", p, o, c.name)
				}
				seen[p] = c.name
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not reached in %v: %s", assignerWait, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func createAssignerTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createTopic(t, kadm.NewClient(cl), topic, partitions)
}

func TestAssignerWarmHandoff(t *testing.T) {
	n := testkit.StartNode(t, node.Config{Assigner: assigner.Config{LeaseTTL: 3 * time.Second, Debounce: 200 * time.Millisecond}})
	const topic = "warm"
	createAssignerTopic(t, n.KafkaAddr(), topic, 12)
	addr := n.GRPCAddr()

	// Health checking and reflection are served.
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), assignerWait)
	defer cancel()
	hr, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: "kafka_assigner.v1.KafkaAssigner"})
	if err != nil || hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", hr, err)
	}
	rs, err := reflectionpb.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	rr, err := rs.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var services []string
	for _, s := range rr.GetListServicesResponse().GetService() {
		services = append(services, s.GetName())
	}
	if !slices.Contains(services, "kafka_assigner.v1.KafkaAssigner") {
		t.Fatalf("reflection lists %v", services)
	}

	// Calls that do not fit: an unknown topic, an unknown consumer, a
	// consumer that is not warming or releasing the partition.
	cl := dialAssigner(t, addr)
	gctx := metadata.AppendToOutgoingContext(ctx, assigner.GroupMetadataKey, "g")
	st, err := cl.Register(gctx, &kafkaassignerpb.RegisterRequest{ConsumerName: "x", Topic: "no-such-topic"})
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.NotFound {
		t.Fatalf("register for a missing topic: %v", err)
	}
	if _, err := cl.PartitionReady(gctx, &kafkaassignerpb.PartitionReadyRequest{ConsumerName: "nobody", Partition: &kafkaassignerpb.TopicPartition{Topic: topic, Partition: 1}}); status.Code(err) != codes.NotFound {
		t.Fatalf("ready from an unknown consumer: %v", err)
	}

	// Three consumers: 4 partitions each.
	cs := []*akConsumer{
		startAKConsumer(t, addr, "g", "c0", topic, false),
		startAKConsumer(t, addr, "g", "c1", topic, false),
		startAKConsumer(t, addr, "g", "c2", topic, false),
	}
	waitOwned(t, cs, []int{4, 4, 4})
	for _, c := range cs {
		if f := c.firstUpdate(); f == nil || len(f.GetAssigned()) != 0 {
			t.Fatalf("%s: the first command is not an empty AssignmentUpdate: %v", c.name, f)
		}
	}
	if _, err := cl.PartitionReleased(gctx, &kafkaassignerpb.PartitionReleasedRequest{ConsumerName: "c0", Partition: &kafkaassignerpb.TopicPartition{Topic: topic, Partition: 0}}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("released by a consumer that is not releasing: %v", err)
	}

	// A fourth joins and holds its warm-up: nothing moves until it says
	// ready.
	d := startAKConsumer(t, addr, "g", "c3", topic, true)
	d.waitWarming(3)
	if _, err := cl.PartitionReady(gctx, &kafkaassignerpb.PartitionReadyRequest{ConsumerName: "c0", Partition: &kafkaassignerpb.TopicPartition{Topic: topic, Partition: 0}}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("ready from a consumer that is not warming: %v", err)
	}
	total := 0
	for _, c := range cs {
		owned, _, _ := c.snapshot()
		total += len(owned)
	}
	if owned, _, _ := d.snapshot(); total != 12 || len(owned) != 0 {
		t.Fatalf("before c3 is ready: the others own %d, c3 %v", total, owned)
	}
	d.allowWarm(topic)
	all := append(cs, d)
	waitOwned(t, all, []int{3, 3, 3, 3})
	moved := 0
	for _, c := range cs {
		c.mu.Lock()
		moved += c.releases
		c.mu.Unlock()
	}
	if moved != 3 {
		t.Fatalf("%d partitions released, want the 3 that moved", moved)
	}

	// c2's connection drops and it registers again at once, within its
	// lease: its snapshot is what it had, and nothing moves.
	had, _, _ := all[2].snapshot()
	warmsBefore := 0
	for _, c := range all {
		c.mu.Lock()
		warmsBefore += c.warms
		c.mu.Unlock()
	}
	all[2].stop()
	all[2] = startAKConsumer(t, addr, "g", "c2", topic, false)
	waitOwned(t, all, []int{3, 3, 3, 3})
	if f := all[2].firstUpdate(); len(f.GetAssigned()) != len(had) {
		t.Fatalf("c2's snapshot after reconnecting: %v, it had %v", f, had)
	}
	if now, _, _ := all[2].snapshot(); !slices.Equal(now, had) {
		t.Fatalf("c2 owns %v after reconnecting, had %v", now, had)
	}
	time.Sleep(500 * time.Millisecond) // longer than the debounce: a rebalance would have sent warms by now
	warmsAfter := 0
	for _, c := range all {
		c.mu.Lock()
		warmsAfter += c.warms
		c.mu.Unlock()
	}
	if warmsAfter != warmsBefore {
		t.Fatalf("a reconnect within the lease moved partitions: %d warm commands", warmsAfter-warmsBefore)
	}

	// c1 goes away without a goodbye: after its lease (3 s) its
	// partitions go to the others directly.
	all[1].stop()
	rest := []*akConsumer{all[0], all[2], all[3]}
	waitOwned(t, rest, []int{4, 4, 4})

	// A second live stream for one consumer replaces the first, which
	// ends with ABORTED and says why.
	first := startAKConsumer(t, addr, "dup", "twice", topic, false)
	waitOwned(t, []*akConsumer{first}, []int{12})
	second := startAKConsumer(t, addr, "dup", "twice", topic, false)
	<-first.done
	first.mu.Lock()
	ferr := first.err
	first.mu.Unlock()
	if status.Code(ferr) != codes.Aborted || !strings.Contains(status.Convert(ferr).Message(), "registered again") {
		t.Fatalf("the replaced stream ended with %v", ferr)
	}
	waitOwned(t, []*akConsumer{second}, []int{12})
	if f := second.firstUpdate(); len(f.GetAssigned()) != 12 {
		t.Fatalf("the new stream's snapshot: %v", f)
	}
}

// TestAssignerSIGKILL: the real binary is killed in the middle of a
// handoff; after a restart on the same data directory every owner and the
// pending handoff are still there, and the handoff completes.
func TestAssignerSIGKILL(t *testing.T) {
	dir := t.TempDir()
	p := testkit.StartBinary(t, dir, "--assigner-lease-ttl", "20s", "--assigner-rebalance-debounce", "200ms")
	const topic = "killed"
	createAssignerTopic(t, p.Addr, topic, 6)
	a := startAKConsumer(t, p.GRPCAddr, "k", "a", topic, false)
	waitOwned(t, []*akConsumer{a}, []int{6})
	b := startAKConsumer(t, p.GRPCAddr, "k", "b", topic, true)
	b.waitWarming(3)
	p.Kill()
	a.stop()
	b.stop()

	p2 := testkit.StartBinary(t, dir, "--assigner-lease-ttl", "20s", "--assigner-rebalance-debounce", "200ms")
	a2 := startAKConsumer(t, p2.GRPCAddr, "k", "a", topic, false)
	// b2 starts only once a2 has its snapshot: otherwise b2 could say
	// ready and complete the handoffs before a2's snapshot is taken.
	testkit.Eventually(t, 30*time.Second, "a's first assignment after the restart", func() bool { return a2.firstUpdate() != nil })
	b2 := startAKConsumer(t, p2.GRPCAddr, "k", "b", topic, false)
	// a's snapshot is all six again; b is told to warm the same three
	// again, says ready, and the handoffs complete.
	waitOwned(t, []*akConsumer{a2, b2}, []int{3, 3})
	if f := a2.firstUpdate(); f == nil || len(f.GetAssigned()) != 6 {
		t.Fatalf("a's snapshot after the restart: %v", f)
	}
	b2.mu.Lock()
	warms := b2.warms
	b2.mu.Unlock()
	if warms != 3 {
		t.Fatalf("b got %d warm commands after the restart, want the 3 pending", warms)
	}
}

// TestAssignerExternalKafka: a topic this node does not host takes its
// partition count from the external Kafka cluster given by
// --assigner-kafka-bootstrap (here another Cohort node), and partitions
// added there are balanced.
func TestAssignerExternalKafka(t *testing.T) {
	ext := testkit.StartNode(t, node.Config{})
	const topic = "elsewhere"
	createAssignerTopic(t, ext.KafkaAddr(), topic, 5)
	n := testkit.StartNode(t, node.Config{
		AssignerKafkaBootstrap: ext.KafkaAddr(),
		Assigner:               assigner.Config{Debounce: 100 * time.Millisecond, GrowthCheck: 100 * time.Millisecond},
	})
	a := startAKConsumer(t, n.GRPCAddr(), "x", "a", topic, false)
	b := startAKConsumer(t, n.GRPCAddr(), "x", "b", topic, false)
	waitOwned(t, []*akConsumer{a, b}, []int{3, 2})

	cl, err := kgo.NewClient(kgo.SeedBrokers(ext.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), assignerWait)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreatePartitions(ctx, 3, topic)
	if err != nil || resp[topic].Err != nil {
		t.Fatalf("add partitions: %v %v", err, resp[topic].Err)
	}
	waitOwned(t, []*akConsumer{a, b}, []int{4, 4})
}
