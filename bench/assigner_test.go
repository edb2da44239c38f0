package bench

// The warm-handoff assignment service: 200 consumers hold a 10,000-partition
// topic; a 201st registers. Timed: from its Register call until it has
// every warm command the rebalance sends it.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/assigner"
	"github.com/cohort-dev/cohort/assigner/kafkaassignerpb"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/cohort-dev/cohort/internal/memtest"
)

const (
	akConsumers  = 200
	akPartitions = 10000
	akTopic      = "handoff"
	akDebounce   = time.Second // the default
)

// akStream is one registered consumer: it counts what its stream brings.
type akStream struct {
	mu     sync.Mutex
	owned  int
	warms  int
	lastAt time.Time // when the last warm arrived
	err    error
	cancel context.CancelFunc
	done   chan struct{}
}

func registerAK(ctx context.Context, cl kafkaassignerpb.KafkaAssignerClient, group, name string) (*akStream, error) {
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(ctx, assigner.GroupMetadataKey, group))
	st, err := cl.Register(ctx, &kafkaassignerpb.RegisterRequest{ConsumerName: name, Topic: akTopic})
	if err != nil {
		cancel()
		return nil, err
	}
	s := &akStream{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			cmd, err := st.Recv()
			now := time.Now()
			s.mu.Lock()
			if err != nil {
				if ctx.Err() == nil {
					s.err = err
				}
				s.mu.Unlock()
				return
			}
			switch x := cmd.Command.(type) {
			case *kafkaassignerpb.AssignmentCommand_Assignment:
				s.owned += len(x.Assignment.GetAssigned()) - len(x.Assignment.GetUnassigned())
			case *kafkaassignerpb.AssignmentCommand_Warm:
				s.warms++
				s.lastAt = now
			}
			s.mu.Unlock()
		}
	}()
	return s, nil
}

func (s *akStream) state() (owned, warms int, last time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owned, s.warms, s.lastAt, s.err
}

// BenchmarkAssignerJoin: one op is one scale-out 200 → 201 in a new
// group (the 200 register and get their 50 partitions each before the
// timer). Metrics: ms/join (Register call to the last warm command),
// over-debounce-ms (that, less the 1 s debounce: the coordinator's own
// time), moved (warm commands: the partitions that move; the minimum is
// 49), heap-KiB/consumer (Go heap after GC per registered consumer, in
// this process, which holds both the server and the 200 gRPC clients).
func BenchmarkAssignerJoin(b *testing.B) {
	n := testkit.StartNode(b, node.Config{Assigner: assigner.Config{Debounce: akDebounce}})
	createTopics(benchContext(b), b, n.KafkaAddr(), akPartitions, akTopic)
	cc, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	cl := kafkaassignerpb.NewKafkaAssignerClient(cc)
	ctx := benchContext(b)

	var total time.Duration
	moved, iter := 0, 0
	var perConsumer float64
	for b.Loop() {
		b.StopTimer()
		iter++
		group := fmt.Sprintf("bench-%d", iter)
		before := memtest.HeapAlloc()
		var streams []*akStream
		for i := range akConsumers {
			s, err := registerAK(ctx, cl, group, fmt.Sprintf("c%03d", i))
			if err != nil {
				b.Fatal(err)
			}
			streams = append(streams, s)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			all := 0
			for _, s := range streams {
				o, _, _, err := s.state()
				if err != nil {
					b.Fatal(err)
				}
				all += o
			}
			if all == akPartitions {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("set-up: %d of %d partitions assigned", all, akPartitions)
			}
			time.Sleep(10 * time.Millisecond)
		}
		perConsumer = (float64(memtest.HeapAlloc()) - float64(before)) / akConsumers / 1024

		b.StartTimer()
		t0 := time.Now()
		s, err := registerAK(ctx, cl, group, "newcomer")
		if err != nil {
			b.Fatal(err)
		}
		// The rebalance sends all its warms in one batch; wait until
		// the count has been still for two debounces.
		want := akPartitions / (akConsumers + 1)
		var last time.Time
		var warms int
		for {
			_, w, at, err := s.state()
			if err != nil {
				b.Fatal(err)
			}
			if w >= want && time.Since(at) > 2*akDebounce {
				warms, last = w, at
				break
			}
			if time.Since(t0) > time.Minute {
				b.Fatalf("newcomer got %d warms in a minute, want %d", w, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
		b.StopTimer()
		total += last.Sub(t0)
		moved += warms
		for _, st := range append(streams, s) {
			st.cancel()
			<-st.done
		}
		b.StartTimer()
	}
	b.ReportMetric(ms(total)/float64(iter), "ms/join")
	b.ReportMetric(ms(total)/float64(iter)-ms(akDebounce), "over-debounce-ms")
	b.ReportMetric(float64(moved)/float64(iter), "moved")
	b.ReportMetric(perConsumer, "heap-KiB/consumer")
}
