package node

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cohort-dev/cohort/admin"
)

// remoteOffsets keeps, in cluster mode, the start and end offsets of the
// partitions other nodes lead, read through the Kafka protocol (ListOffsets
// routed to each leader, as any client would) by the admin API's lag
// sampler before each sample (admin.APIConfig.RefreshEnds), so that every
// sample reads lag against the leaders' log ends of that moment. A
// group's coordinator is often not its partitions' leader: without them
// its lag would be unknown for every partition led elsewhere, in
// /metrics, the JSON API and the lag status.
type remoteOffsets struct {
	n    *Node
	last atomic.Pointer[map[admin.TopicPartition]admin.PartitionOffsets]

	mu     sync.Mutex // the client's
	adm    *kadm.Client
	cl     *kgo.Client
	closed bool
	warned bool
}

// get returns the last reading (nil before the first).
func (r *remoteOffsets) get() map[admin.TopicPartition]admin.PartitionOffsets {
	if m := r.last.Load(); m != nil {
		return *m
	}
	return nil
}

// client returns the client, made on first use through this node's own
// PLAINTEXT listener; nil without one.
func (r *remoteOffsets) client() *kadm.Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.adm != nil || r.closed {
		return r.adm
	}
	addr := r.n.plaintextAddr()
	if addr == "" {
		if !r.warned {
			r.warned = true
			r.n.logger.Warn("lag of partitions led by other nodes is not read: it needs a PLAINTEXT Kafka listener on this node")
		}
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("cohort-lag"))
	if err != nil {
		r.n.logger.Warn("lag of partitions led by other nodes: no client", "err", err)
		return nil
	}
	r.cl, r.adm = cl, kadm.NewClient(cl)
	return r.adm
}

// close closes the client.
func (r *remoteOffsets) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.cl != nil {
		r.cl.Close()
		r.cl, r.adm = nil, nil
	}
}

// refresh reads the offsets of every partition led by another node, within
// ctx (the sample's). A partition whose read fails (its leader down: the
// topic log keeps one copy, so the partition is offline until it is back)
// keeps its last offsets: its end can only have grown, so its lag is at
// least what they give, where dropping it made the group's total lag
// fall as its leader died, and the lag status look better for it.
func (r *remoteOffsets) refresh(ctx context.Context) {
	adm := r.client()
	if adm == nil {
		return
	}
	var names []string
	elsewhere := map[admin.TopicPartition]bool{}
	for _, t := range r.n.topics.Topics() {
		for i, p := range t.Partitions {
			if p == nil { // led by another node
				if len(names) == 0 || names[len(names)-1] != t.Name {
					names = append(names, t.Name)
				}
				elsewhere[admin.TopicPartition{Topic: t.Name, Partition: int32(i)}] = true
			}
		}
	}
	out := map[admin.TopicPartition]admin.PartitionOffsets{}
	if len(names) > 0 {
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
		keepLast(out, r.get(), elsewhere)
	}
	r.last.Store(&out)
}

// keepLast adds to out the offsets last held of the partitions still led
// elsewhere that out lacks.
func keepLast(out, last map[admin.TopicPartition]admin.PartitionOffsets, elsewhere map[admin.TopicPartition]bool) {
	for tp, po := range last {
		if _, ok := out[tp]; !ok && elsewhere[tp] {
			out[tp] = po
		}
	}
}
