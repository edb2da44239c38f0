package node

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cohort-dev/cohort/admin"
)

// remoteOffsets keeps, in cluster mode, the start and end offsets of the
// partitions other nodes lead, read through the Kafka protocol (ListOffsets
// routed to each leader, as any client would) every interval. A group's
// coordinator is often not its partitions' leader: without them its lag
// would be unknown for every partition led elsewhere, in /metrics, the
// JSON API and the lag status.
type remoteOffsets struct {
	n    *Node
	last atomic.Pointer[map[admin.TopicPartition]admin.PartitionOffsets]
}

// get returns the last reading (nil before the first).
func (r *remoteOffsets) get() map[admin.TopicPartition]admin.PartitionOffsets {
	if m := r.last.Load(); m != nil {
		return *m
	}
	return nil
}

// run refreshes the reading every interval until ctx ends.
func (r *remoteOffsets) run(ctx context.Context, interval time.Duration) {
	addr := r.n.plaintextAddr()
	if addr == "" {
		r.n.logger.Warn("lag of partitions led by other nodes is not read: it needs a PLAINTEXT Kafka listener on this node")
		return
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("cohort-lag"))
	if err != nil {
		r.n.logger.Warn("lag of partitions led by other nodes: no client", "err", err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		r.refresh(ctx, adm, interval)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *remoteOffsets) refresh(ctx context.Context, adm *kadm.Client, interval time.Duration) {
	var names []string
	for _, t := range r.n.topics.Topics() {
		for _, p := range t.Partitions {
			if p == nil { // led by another node
				names = append(names, t.Name)
				break
			}
		}
	}
	out := map[admin.TopicPartition]admin.PartitionOffsets{}
	if len(names) > 0 {
		ctx, cancel := context.WithTimeout(ctx, max(interval, 2*time.Second))
		defer cancel()
		starts, serr := adm.ListStartOffsets(ctx, names...)
		ends, eerr := adm.ListEndOffsets(ctx, names...)
		if serr != nil || eerr != nil {
			if ctx.Err() == nil {
				r.n.logger.Debug("lag of partitions led by other nodes", "start_err", serr, "end_err", eerr)
			}
		}
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				return
			}
			po := admin.PartitionOffsets{Start: -1, End: o.Offset}
			if s, ok := starts.Lookup(o.Topic, o.Partition); ok && s.Err == nil {
				po.Start = s.Offset
			}
			out[admin.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = po
		})
	}
	r.last.Store(&out)
}
