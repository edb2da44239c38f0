package sharecoord

// Shards other nodes serve (cluster mode).
//
// A share partition's records are read where its log is: its leader
// serves ShareFetch and ShareAcknowledge. Its share state lives in a
// share-state shard, a cluster unit that may be another node's. The
// host's methods therefore run a command here when this node serves its
// shard, or when nothing says another node does (a single node; a shard
// with no live owner, which answers NOT_COORDINATOR here), and otherwise
// send it to the shard's node (Remote) and wait for that node's answer,
// which it gives once the command's records are durable there, as
// Kafka's share-partition leader writes through its persister to the
// share coordinator. What travels is the command's kind and JSON
// (RunForwarded's input); the wire layer carries it between nodes. A
// command is never forwarded twice: RunForwarded runs it here or answers
// NOT_COORDINATOR.
//
// Release and Describe naming no partitions (every partition of a group)
// run on this node's shards and on every other node serving one.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Remote reaches the share-state shards of other nodes.
type Remote interface {
	// Owner returns the live node serving shard i, if another node
	// does.
	Owner(i int) (node int32, ok bool)
	// Send delivers a forwarded command of tenant to node, which hands
	// it to its host's RunForwarded, and returns the answer.
	Send(ctx context.Context, node int32, tenant string, cmd []byte) ([]byte, error)
}

// SetRemote makes the host send the commands of shards other nodes serve
// to them.
func (h *Host) SetRemote(r Remote) { h.remote.Store(&r) }

// envelope is a forwarded command: its kind and its JSON.
type envelope struct {
	Kind string          `json:"kind"`
	Cmd  json.RawMessage `json:"cmd"`
}

// The kinds of command forwarded.
const (
	kindNext     = "next"
	kindAcquire  = "acquire"
	kindAck      = "ack"
	kindRelease  = "release"
	kindAlter    = "alter"
	kindDelete   = "delete"
	kindDescribe = "describe"
	kindLettered = "deadlettered"
)

// owner returns the node serving shard i when another one does.
//
// The cluster's assignment decides, not what this node holds: a shard
// this node still holds after the assignment gave it to another node (its
// unload not yet done) is not served here: every write would meet the
// new owner's fence, but a command that writes nothing (a Next, a
// Describe, a fetch that acquires nothing) would answer from what may
// already be stale.
func (h *Host) owner(i int) (int32, bool) {
	r := h.remote.Load()
	if r == nil {
		return 0, false
	}
	return (*r).Owner(i)
}

// Remote reports whether key's shard is served by another node: a fetch
// waiting on it cannot Watch it, and looks again from time to time.
func (h *Host) Remote(key sharestate.Key) bool {
	_, ok := h.owner(h.ShardFor(key))
	return ok
}

// Next begins a ShareFetch of one partition (sharestate.NextCmd): it
// initialises the partition from share.auto.offset.reset and the log's
// offsets if it has no state, and says where to read.
func (h *Host) Next(ctx context.Context, c sharestate.NextCmd) sharestate.Next {
	if node, ok := h.owner(h.ShardFor(c.Key)); ok {
		out := sharestate.Next{Offset: -1}
		if code := h.forward(ctx, node, c.Key.Tenant, kindNext, c, &out); code != 0 {
			return sharestate.Next{Code: code, Offset: -1}
		}
		return out
	}
	return h.localNext(ctx, c)
}

// Acquire hands over what the log read from Next's offset and acquires
// records for the member (sharestate.AcquireCmd).
func (h *Host) Acquire(ctx context.Context, c sharestate.AcquireCmd) sharestate.Acquired {
	if node, ok := h.owner(h.ShardFor(c.Key)); ok {
		var out sharestate.Acquired
		if code := h.forward(ctx, node, c.Key.Tenant, kindAcquire, c, &out); code != 0 {
			return sharestate.Acquired{Code: code}
		}
		return out
	}
	return h.localAcquire(ctx, c)
}

// Ack settles one partition's acknowledgements (sharestate.AckCmd: a
// ShareAcknowledge's or a ShareFetch's), all or nothing; answered once
// they are durable.
func (h *Host) Ack(ctx context.Context, c sharestate.AckCmd) sharestate.Result {
	if node, ok := h.owner(h.ShardFor(c.Key)); ok {
		return h.forwardResult(ctx, node, c.Key.Tenant, kindAck, c)
	}
	return h.localAck(ctx, c)
}

// DeadLettered archives a partition's ARCHIVING records among First to
// Last (sharestate.DeadLetteredCmd): their dead letters are written, or
// never will be.
func (h *Host) DeadLettered(ctx context.Context, c sharestate.DeadLetteredCmd) sharestate.Result {
	if node, ok := h.owner(h.ShardFor(c.Key)); ok {
		return h.forwardResult(ctx, node, c.Key.Tenant, kindLettered, c)
	}
	return h.localDeadLettered(ctx, c)
}

// Alter is AlterShareGroupOffsets for one partition (sharestate.AlterCmd).
func (h *Host) Alter(ctx context.Context, c sharestate.AlterCmd) sharestate.Result {
	if node, ok := h.owner(h.ShardFor(c.Key)); ok {
		return h.forwardResult(ctx, node, c.Key.Tenant, kindAlter, c)
	}
	return h.localAlter(ctx, c)
}

// Delete is DeleteShareGroupOffsets for one partition
// (sharestate.DeleteCmd).
func (h *Host) Delete(ctx context.Context, c sharestate.DeleteCmd) sharestate.Result {
	if node, ok := h.owner(h.ShardFor(c.Key)); ok {
		return h.forwardResult(ctx, node, c.Key.Tenant, kindDelete, c)
	}
	return h.localDelete(ctx, c)
}

// Release gives back the records a member holds (sharestate.ReleaseCmd:
// it left, was fenced, or closed its share session): of the partitions
// named, each on its shard's node; with Partitions nil, of every
// partition of the group, here and on every other node serving a shard.
// The answer is the first error, if any.
func (h *Host) Release(ctx context.Context, c sharestate.ReleaseCmd) sharestate.Result {
	byNode, local := h.splitNodes(c.Partitions)
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
			note(h.forwardResult(ctx, node, c.Tenant, kindRelease, cmd).Code)
		})
	}
	if local != nil || c.Partitions == nil {
		cmd := c
		if c.Partitions != nil {
			cmd.Partitions = local
		}
		note(h.localRelease(ctx, cmd).Code)
	}
	wg.Wait()
	return sharestate.Result{Code: first}
}

// Describe describes partitions (sharestate.DescribeCmd:
// DescribeShareGroupOffsets' view), each on its shard's node, in the
// order named; a partition whose shard could not answer has that error in
// its Code. Partitions nil is every partition of the group, here and on
// every other node serving a shard, in key order (a node that does not
// answer leaves its partitions out).
func (h *Host) Describe(ctx context.Context, c sharestate.DescribeCmd) []sharestate.Description {
	byNode, local := h.splitNodes(c.Partitions)
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
			if code := h.forward(ctx, node, c.Tenant, kindDescribe, cmd, &out); code != 0 {
				out = out[:0]
				for _, k := range keys {
					out = append(out, sharestate.Description{Key: k, Code: code, StartOffset: -1, EndOffset: -1})
				}
			}
			mu.Lock()
			answers[node] = out
			mu.Unlock()
		})
	}
	var all []sharestate.Description
	if local != nil || c.Partitions == nil {
		cmd := c
		if c.Partitions != nil {
			cmd.Partitions = local
		}
		all = h.localDescribe(ctx, cmd)
	}
	wg.Wait()
	if len(answers) == 0 {
		return all // all here, in the order wanted
	}
	for _, ds := range answers {
		all = append(all, ds...)
	}
	if c.Partitions == nil {
		slices.SortFunc(all, func(a, b sharestate.Description) int { return compareKeys(a.Key, b.Key) })
		return all
	}
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

// splitNodes groups keys by the node serving their shard: the other
// nodes' and this one's (nil if none). With keys nil, every other node
// serving a shard, with no keys.
func (h *Host) splitNodes(keys []sharestate.Key) (map[int32][]sharestate.Key, []sharestate.Key) {
	byNode := map[int32][]sharestate.Key{}
	if keys == nil {
		for i := range h.cfg.Shards {
			if node, ok := h.owner(i); ok {
				byNode[node] = nil
			}
		}
		return byNode, nil
	}
	var local []sharestate.Key
	for _, k := range keys {
		if node, ok := h.owner(h.ShardFor(k)); ok {
			byNode[node] = append(byNode[node], k)
		} else {
			local = append(local, k)
		}
	}
	return byNode, local
}

func (h *Host) forwardResult(ctx context.Context, node int32, tenant, kind string, cmd any) sharestate.Result {
	var out sharestate.Result
	if code := h.forward(ctx, node, tenant, kind, cmd, &out); code != 0 {
		return sharestate.Result{Code: code}
	}
	return out
}

// forward sends cmd to node and decodes its answer into out; a code other
// than 0 is the forward's failure: NOT_COORDINATOR when the node cannot be
// reached or did not run it (the caller's client retries, the shard's
// owner found again), REQUEST_TIMED_OUT when ctx ended.
func (h *Host) forward(ctx context.Context, node int32, tenant, kind string, cmd, out any) int16 {
	r := h.remote.Load()
	body, err := json.Marshal(cmd)
	if err != nil || r == nil {
		h.cfg.Logger.Error("share command not forwardable", "kind", kind, "err", err)
		return kerr.UnknownServerError.Code
	}
	env, _ := json.Marshal(envelope{Kind: kind, Cmd: body})
	answer, err := (*r).Send(ctx, node, tenant, env)
	switch {
	case err != nil && ctx.Err() != nil:
		return kerr.RequestTimedOut.Code
	case err != nil:
		h.cfg.Logger.Debug("share command not forwarded", "node", node, "kind", kind, "err", err)
		return kerr.NotCoordinator.Code
	}
	if err := json.Unmarshal(answer, out); err != nil {
		h.cfg.Logger.Error("share answer not decodable", "node", node, "kind", kind, "err", err)
		return kerr.UnknownServerError.Code
	}
	return 0
}

// ErrBadCommand is RunForwarded's answer to input that is no command.
var ErrBadCommand = errors.New("sharecoord: not a share-state command")

// RunForwarded runs a command another node's host forwarded (Remote.Send
// delivers it), for tenant, on this node's shards only, and returns the
// answer to send back.
func (h *Host) RunForwarded(ctx context.Context, tenant string, cmd []byte) ([]byte, error) {
	var env envelope
	if err := json.Unmarshal(cmd, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadCommand, err)
	}
	tenantOf := func(ks []sharestate.Key) {
		for i := range ks {
			ks[i].Tenant = tenant
		}
	}
	switch env.Kind {
	case kindNext:
		return runAs(env, func(c *sharestate.NextCmd) any { c.Key.Tenant = tenant; return h.localNext(ctx, *c) })
	case kindAcquire:
		return runAs(env, func(c *sharestate.AcquireCmd) any { c.Key.Tenant = tenant; return h.localAcquire(ctx, *c) })
	case kindAck:
		return runAs(env, func(c *sharestate.AckCmd) any { c.Key.Tenant = tenant; return h.localAck(ctx, *c) })
	case kindAlter:
		return runAs(env, func(c *sharestate.AlterCmd) any { c.Key.Tenant = tenant; return h.localAlter(ctx, *c) })
	case kindDelete:
		return runAs(env, func(c *sharestate.DeleteCmd) any { c.Key.Tenant = tenant; return h.localDelete(ctx, *c) })
	case kindLettered:
		return runAs(env, func(c *sharestate.DeadLetteredCmd) any {
			c.Key.Tenant = tenant
			return h.localDeadLettered(ctx, *c)
		})
	case kindRelease:
		return runAs(env, func(c *sharestate.ReleaseCmd) any {
			c.Tenant = tenant
			tenantOf(c.Partitions)
			return h.localRelease(ctx, *c)
		})
	case kindDescribe:
		return runAs(env, func(c *sharestate.DescribeCmd) any {
			c.Tenant = tenant
			tenantOf(c.Partitions)
			if ds := h.localDescribe(ctx, *c); ds != nil {
				return ds
			}
			return []sharestate.Description{}
		})
	}
	return nil, fmt.Errorf("%w: kind %q", ErrBadCommand, env.Kind)
}

// runAs decodes env's command as a C, runs it and encodes the answer.
func runAs[C any](env envelope, run func(*C) any) ([]byte, error) {
	var c C
	if err := json.Unmarshal(env.Cmd, &c); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadCommand, env.Kind, err)
	}
	return json.Marshal(run(&c))
}
