package kafka

// Routing share-state commands (KIP-932) to the node that serves their
// share-state shard.
//
// A share partition's records are read where the partition's log is: its
// leader serves ShareFetch and ShareAcknowledge. Its share state lives in
// a share-state shard (sharecoord), a cluster unit that may be another
// node's. The leader then sends each command (where to read, what to
// acquire, the acknowledgements, releases) to that node and waits for the
// answer, which that node gives once the command's records are durable,
// as Kafka's share-partition leader writes through its persister to the
// share coordinator (WriteShareGroupState and friends, keys 83–87). The
// commands travel in Kafka's own inter-broker key for it,
// WriteShareGroupState (85), over the node-to-node client (Config.Peer),
// the command in a tagged field Kafka does not define (shareCmdTag), so
// that nothing but another Cohort node's request carries one; the answer
// comes back the same way. See 85_write_share_group_state.go.
//
// A single node, or a shard held here, runs the command here.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareCmdTag is the tagged field a forwarded share-state command and its
// answer travel in ("cos").
const shareCmdTag = 0x636f73

// shareEnvelope is a forwarded command: its kind and its JSON.
type shareEnvelope struct {
	Kind string          `json:"kind"`
	Cmd  json.RawMessage `json:"cmd"`
}

// The kinds of command forwarded.
const (
	shareKindNext     = "next"
	shareKindAcquire  = "acquire"
	shareKindAck      = "ack"
	shareKindRelease  = "release"
	shareKindAlter    = "alter"
	shareKindDelete   = "delete"
	shareKindDescribe = "describe"
)

// shareOwner returns the node serving shard i when it is another one
// (remote), else this node runs it (and answers NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS itself if it does not serve it).
func (s *Server) shareOwner(i int) (node int32, remote bool) {
	if s.cfg.Cluster == nil || s.cfg.Peer == nil || s.share.Holds(i) {
		return 0, false
	}
	b, ok := s.cluster.Coordinator(s.shareUnitOf(i))
	if !ok || b.NodeID == s.cluster.Self() {
		return 0, false
	}
	return b.NodeID, true
}

// shareUnitOf is the cluster unit of share-state shard i.
func (s *Server) shareUnitOf(i int) int {
	txn := 0
	if s.txn != nil {
		txn = s.txn.Shards()
	}
	return s.groups.Shards() + 1 + txn + i
}

// shareRemote reports whether key's shard is another node's, and which.
func (s *Server) shareRemote(key sharestate.Key) (int32, bool) {
	return s.shareOwner(s.share.ShardFor(key))
}

func (s *Server) shareNext(ctx context.Context, c sharestate.NextCmd) sharestate.Next {
	if node, ok := s.shareRemote(c.Key); ok {
		out := sharestate.Next{Offset: -1}
		if code := s.forwardShare(ctx, node, c.Key.Tenant, shareKindNext, c, &out); code != 0 {
			return sharestate.Next{Code: code, Offset: -1}
		}
		return out
	}
	return s.share.Next(ctx, c)
}

func (s *Server) shareAcquire(ctx context.Context, c sharestate.AcquireCmd) sharestate.Acquired {
	if node, ok := s.shareRemote(c.Key); ok {
		var out sharestate.Acquired
		if code := s.forwardShare(ctx, node, c.Key.Tenant, shareKindAcquire, c, &out); code != 0 {
			return sharestate.Acquired{Code: code}
		}
		return out
	}
	return s.share.Acquire(ctx, c)
}

func (s *Server) shareAck(ctx context.Context, c sharestate.AckCmd) sharestate.Result {
	if node, ok := s.shareRemote(c.Key); ok {
		return s.forwardResult(ctx, node, c.Key.Tenant, shareKindAck, c)
	}
	return s.share.Ack(ctx, c)
}

func (s *Server) shareAlter(ctx context.Context, c sharestate.AlterCmd) sharestate.Result {
	if node, ok := s.shareRemote(c.Key); ok {
		return s.forwardResult(ctx, node, c.Key.Tenant, shareKindAlter, c)
	}
	return s.share.Alter(ctx, c)
}

func (s *Server) shareDelete(ctx context.Context, c sharestate.DeleteCmd) sharestate.Result {
	if node, ok := s.shareRemote(c.Key); ok {
		return s.forwardResult(ctx, node, c.Key.Tenant, shareKindDelete, c)
	}
	return s.share.Delete(ctx, c)
}

// shareRelease gives back what a member holds: of the partitions named,
// on each one's node; with Partitions nil, of every partition of the
// group, on every node serving a share-state shard. The answer is the
// first error, if any.
func (s *Server) shareRelease(ctx context.Context, c sharestate.ReleaseCmd) sharestate.Result {
	byNode, local := s.shareSplit(c.Partitions)
	var mu sync.Mutex
	var first int16
	note := func(code int16) {
		mu.Lock()
		if first == 0 {
			first = code
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for node, keys := range byNode {
		wg.Go(func() {
			cmd := c
			if c.Partitions != nil {
				cmd.Partitions = keys
			}
			note(s.forwardResult(ctx, node, c.Tenant, shareKindRelease, cmd).Code)
		})
	}
	if local != nil || c.Partitions == nil {
		cmd := c
		if c.Partitions != nil {
			cmd.Partitions = local
		}
		note(s.share.Release(ctx, cmd).Code)
	}
	wg.Wait()
	return sharestate.Result{Code: first}
}

// shareDescribe describes partitions (DescribeCmd), each on its node; with
// Partitions nil, every partition of the group on every node serving a
// share-state shard, in key order. A node that does not answer gives its
// partitions its error (named ones) or leaves them out (Partitions nil).
func (s *Server) shareDescribe(ctx context.Context, c sharestate.DescribeCmd) []sharestate.Description {
	byNode, local := s.shareSplit(c.Partitions)
	answers := map[int32][]sharestate.Description{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for node, keys := range byNode {
		wg.Go(func() {
			cmd := c
			if c.Partitions != nil {
				cmd.Partitions = keys
			}
			var out []sharestate.Description
			if code := s.forwardShare(ctx, node, c.Tenant, shareKindDescribe, cmd, &out); code != 0 {
				out = nil
				for _, k := range keys {
					out = append(out, sharestate.Description{Key: k, Code: code, StartOffset: -1, EndOffset: -1})
				}
			}
			mu.Lock()
			answers[node] = out
			mu.Unlock()
		})
	}
	var here []sharestate.Description
	if local != nil || c.Partitions == nil {
		cmd := c
		if c.Partitions != nil {
			cmd.Partitions = local
		}
		here = s.share.Describe(ctx, cmd)
	}
	wg.Wait()
	all := here
	for _, ds := range answers {
		all = append(all, ds...)
	}
	if c.Partitions == nil {
		sortDescriptions(all)
		return all
	}
	// In the order named.
	byKey := make(map[sharestate.Key]sharestate.Description, len(all))
	for _, d := range all {
		byKey[d.Key] = d
	}
	out := make([]sharestate.Description, len(c.Partitions))
	for i, k := range c.Partitions {
		d, ok := byKey[k]
		if !ok {
			d = sharestate.Description{Key: k, Code: kerr.NotCoordinator.Code, StartOffset: -1, EndOffset: -1}
		}
		out[i] = d
	}
	return out
}

// shareSplit groups keys by the node serving their shard: the other
// nodes' and this one's (nil if none). With keys nil, every other node
// serving a share-state shard, with no keys.
func (s *Server) shareSplit(keys []sharestate.Key) (map[int32][]sharestate.Key, []sharestate.Key) {
	byNode := map[int32][]sharestate.Key{}
	if keys == nil {
		for i := range s.share.Shards() {
			if node, ok := s.shareOwner(i); ok {
				byNode[node] = nil
			}
		}
		return byNode, nil
	}
	var local []sharestate.Key
	for _, k := range keys {
		if node, ok := s.shareRemote(k); ok {
			byNode[node] = append(byNode[node], k)
		} else {
			local = append(local, k)
		}
	}
	return byNode, local
}

func (s *Server) forwardResult(ctx context.Context, node int32, tenant, kind string, cmd any) sharestate.Result {
	var out sharestate.Result
	if code := s.forwardShare(ctx, node, tenant, kind, cmd, &out); code != 0 {
		return sharestate.Result{Code: code}
	}
	return out
}

// forwardShare sends cmd to node and decodes its answer into out; a code
// other than 0 is the request's failure: NOT_COORDINATOR when the node
// cannot be reached or does not run it (the caller's client retries,
// finding the shard's owner again), REQUEST_TIMED_OUT when ctx ends.
func (s *Server) forwardShare(ctx context.Context, node int32, tenant, kind string, cmd, out any) int16 {
	body, err := json.Marshal(cmd)
	if err != nil {
		s.logger.Error("share command not encodable", "kind", kind, "err", err)
		return kerr.UnknownServerError.Code
	}
	env, _ := json.Marshal(shareEnvelope{Kind: kind, Cmd: body})
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.Version = 0
	tagTenant(&req.UnknownTags, tenant)
	req.UnknownTags.Set(shareCmdTag, env)
	kresp, err := s.cfg.Peer(ctx, node, req)
	if err != nil {
		if ctx.Err() != nil {
			return kerr.RequestTimedOut.Code
		}
		s.logger.Debug("share command not forwarded", "node", node, "kind", kind, "err", err)
		return kerr.NotCoordinator.Code
	}
	resp, ok := kresp.(*kmsg.WriteShareGroupStateResponse)
	var answer []byte
	if ok {
		resp.UnknownTags.Each(func(k uint32, v []byte) {
			if k == shareCmdTag {
				answer = v
			}
		})
	}
	if answer == nil {
		// A node that does not know the tag (an older one) answers as
		// Kafka's share coordinator would.
		return kerr.NotCoordinator.Code
	}
	if err := json.Unmarshal(answer, out); err != nil {
		s.logger.Error("share answer not decodable", "node", node, "kind", kind, "err", err)
		return kerr.UnknownServerError.Code
	}
	return 0
}

// runForwarded runs a command another node forwarded, on this node's
// share coordinator only (a shard not held here answers NOT_COORDINATOR:
// commands are never forwarded twice), for tenant, and returns its answer
// encoded.
func (s *Server) runForwarded(ctx context.Context, tenant string, env shareEnvelope) ([]byte, error) {
	decode := func(v any) error { return json.Unmarshal(env.Cmd, v) }
	var out any
	switch env.Kind {
	case shareKindNext:
		var c sharestate.NextCmd
		if err := decode(&c); err != nil {
			return nil, err
		}
		c.Key.Tenant = tenant
		out = s.share.Next(ctx, c)
	case shareKindAcquire:
		var c sharestate.AcquireCmd
		if err := decode(&c); err != nil {
			return nil, err
		}
		c.Key.Tenant = tenant
		out = s.share.Acquire(ctx, c)
	case shareKindAck:
		var c sharestate.AckCmd
		if err := decode(&c); err != nil {
			return nil, err
		}
		c.Key.Tenant = tenant
		out = s.share.Ack(ctx, c)
	case shareKindRelease:
		var c sharestate.ReleaseCmd
		if err := decode(&c); err != nil {
			return nil, err
		}
		c.Tenant = tenant
		for i := range c.Partitions {
			c.Partitions[i].Tenant = tenant
		}
		out = s.share.Release(ctx, c)
	case shareKindAlter:
		var c sharestate.AlterCmd
		if err := decode(&c); err != nil {
			return nil, err
		}
		c.Key.Tenant = tenant
		out = s.share.Alter(ctx, c)
	case shareKindDelete:
		var c sharestate.DeleteCmd
		if err := decode(&c); err != nil {
			return nil, err
		}
		c.Key.Tenant = tenant
		out = s.share.Delete(ctx, c)
	case shareKindDescribe:
		var c sharestate.DescribeCmd
		if err := decode(&c); err != nil {
			return nil, err
		}
		c.Tenant = tenant
		for i := range c.Partitions {
			c.Partitions[i].Tenant = tenant
		}
		ds := s.share.Describe(ctx, c)
		if ds == nil {
			ds = []sharestate.Description{}
		}
		out = ds
	default:
		return nil, fmt.Errorf("unknown share command %q", env.Kind)
	}
	return json.Marshal(out)
}

func sortDescriptions(ds []sharestate.Description) {
	slices.SortFunc(ds, func(a, b sharestate.Description) int {
		x, y := a.Key, b.Key
		return cmp.Or(strings.Compare(x.Tenant, y.Tenant), strings.Compare(x.Group, y.Group),
			bytes.Compare(x.TopicID[:], y.TopicID[:]), cmp.Compare(x.Partition, y.Partition))
	})
}
