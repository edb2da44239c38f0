package coordinator

import (
	"crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"sync"

	"github.com/cohort-dev/cohort/assign"
	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Coordinator is the group coordinator: it routes each group request to
// the shard that owns the group, splits requests that name groups of
// several shards, and merges their answers.
//
// A Go broker or gateway can embed it: Start it on a store and hand
// Handle decoded requests.
type Coordinator struct {
	cfg    Config
	shards []*Shard
	tenant string
	topics func() *machine.Catalog
}

// shardsKey stores the shard count a data directory was created with.
const shardsKey = "meta/coordinator-shards"

// Options are the runtime parts of a coordinator.
type Options struct {
	Store  store.Store
	Clock  Clock // nil: the system clock
	Logger *slog.Logger
	// Topics returns the broker's topics, for KIP-848 consumer groups to
	// resolve subscriptions against. Nil: no topics (consumer groups get
	// empty assignments).
	Topics func() *machine.Catalog
}

// Start loads every shard from the store and starts serving. The shard
// count of an existing data directory wins over cfg.Shards.
func Start(cfg Config, opts Options) (*Coordinator, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	n, err := shardCount(opts.Store, cfg.Shards)
	if err != nil {
		return nil, err
	}
	if n != cfg.Shards {
		opts.Logger.Info("using the data directory's coordinator shard count", "shards", n, "configured", cfg.Shards)
		cfg.Shards = n
	}
	c := &Coordinator{cfg: cfg, topics: opts.Topics}
	var assignors []assign.Assignor
	for _, n := range cfg.ConsumerAssignors {
		a, _ := cfg.assignor(n)
		assignors = append(assignors, a)
	}
	errs := make([]error, n)
	c.shards = make([]*Shard, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			mcfg := groups.Config{
				Shard:                  uint16(i),
				MinSessionTimeout:      cfg.MinSessionTimeout,
				MaxSessionTimeout:      cfg.MaxSessionTimeout,
				MaxSize:                cfg.MaxSize,
				MaxPendingMembers:      cfg.MaxPendingMembers,
				InitialDelay:           cfg.InitialRebalanceDelay,
				InitialQuiet:           cfg.InitialRebalanceQuiet,
				OffsetMetadataMaxBytes: cfg.OffsetMetadataMaxBytes,
				Retention:              cfg.OffsetsRetention,
				RetentionCheck:         cfg.OffsetsRetentionCheckInterval,

				ConsumerSessionTimeout:    cfg.ConsumerSessionTimeout,
				ConsumerHeartbeatInterval: cfg.ConsumerHeartbeatInterval,
				AssignmentInterval:        cfg.ConsumerAssignmentInterval,
				ConsumerMaxSize:           cfg.ConsumerMaxSize,
				Assignors:                 assignors,
			}
			c.shards[i], errs[i] = StartShard(ShardConfig{
				ID:    uint16(i),
				Store: opts.Store,
				// A fresh seed for every machine, also when a shard
				// reloads after a failed write: ids handed out before
				// must not be handed out again.
				New: func() Machine {
					c := mcfg
					_, _ = rand.Read(c.Seed[:])
					return groups.New(c)
				},
				Fail:   failReply,
				Clock:  opts.Clock,
				Logger: opts.Logger.With("component", "coordinator"),
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, s := range c.shards {
			if s != nil {
				s.Close()
			}
		}
		return nil, err
	}
	return c, nil
}

// shardCount returns the stored shard count, storing want if there is none.
func shardCount(st store.Store, want int) (int, error) {
	v, err := st.Get([]byte(shardsKey))
	switch {
	case err == nil:
		n, perr := strconv.Atoi(string(v))
		if perr != nil || n < 1 || n >= int(record.AssignerShard) {
			return 0, fmt.Errorf("coordinator: corrupt %s value %q", shardsKey, v)
		}
		return n, nil
	case errors.Is(err, store.ErrNotFound):
		var b store.Batch
		b.Put([]byte(shardsKey), []byte(strconv.Itoa(want)))
		if err := st.Apply(&b); err != nil {
			return 0, fmt.Errorf("coordinator: store shard count: %w", err)
		}
		return want, nil
	default:
		return 0, fmt.Errorf("coordinator: read shard count: %w", err)
	}
}

// Close stops every shard; requests in flight are answered
// COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) Close() {
	var wg sync.WaitGroup
	for _, s := range c.shards {
		wg.Go(s.Close)
	}
	wg.Wait()
}

// ShardFor returns the shard that owns group.
func (c *Coordinator) ShardFor(group string) int {
	h := fnv.New32a()
	h.Write([]byte(c.tenant))
	h.Write([]byte{0})
	h.Write([]byte(group))
	return int(h.Sum32() % uint32(len(c.shards)))
}

// Handle starts serving a group request and returns a function that
// waits for its response. ClientID and ClientHost of req identify the
// connection (JoinGroup records them); ID is ignored.
//
// It serves JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
// OffsetFetch, OffsetDelete, DescribeGroups, ListGroups and DeleteGroups.
// OffsetCommit and OffsetDelete must name only existing partitions:
// checking topics is the broker's part.
func (c *Coordinator) Handle(req Request) func() kmsg.Response {
	if c.topics != nil && req.Topics == nil {
		req.Topics = c.topics()
	}
	switch r := req.Msg.(type) {
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return c.one(req, r.Group)
	case *kmsg.ConsumerGroupDescribeRequest:
		return c.consumerDescribe(req, r)
	case *kmsg.JoinGroupRequest:
		return c.one(req, r.Group)
	case *kmsg.SyncGroupRequest:
		return c.one(req, r.Group)
	case *kmsg.HeartbeatRequest:
		return c.one(req, r.Group)
	case *kmsg.LeaveGroupRequest:
		return c.one(req, r.Group)
	case *kmsg.OffsetCommitRequest:
		return c.one(req, r.Group)
	case *kmsg.OffsetDeleteRequest:
		return c.one(req, r.Group)
	case *kmsg.OffsetFetchRequest:
		if r.Version < 8 {
			return c.one(req, r.Group)
		}
		return c.offsetFetchGroups(req, r)
	case *kmsg.DescribeGroupsRequest:
		return c.describeGroups(req, r)
	case *kmsg.DeleteGroupsRequest:
		return c.deleteGroups(req, r)
	case *kmsg.ListGroupsRequest:
		return c.listGroups(req, r)
	}
	resp := ErrorResponse(req.Msg, kerr.InvalidRequest.Code)
	return func() kmsg.Response { return resp }
}

// submit sends req to shard i.
func (c *Coordinator) submit(i int, req Request) func() kmsg.Response {
	ch, err := c.shards[i].Submit(req)
	if err != nil {
		resp := ErrorResponse(req.Msg, kerr.CoordinatorNotAvailable.Code)
		return func() kmsg.Response { return resp }
	}
	return func() kmsg.Response { return (<-ch).Resp }
}

func (c *Coordinator) one(req Request, group string) func() kmsg.Response {
	return c.submit(c.ShardFor(group), req)
}

// split groups the indexes of names by shard, in shard order.
func (c *Coordinator) split(names []string) (shards []int, idx map[int][]int) {
	idx = map[int][]int{}
	for i, n := range names {
		s := c.ShardFor(n)
		if _, ok := idx[s]; !ok {
			shards = append(shards, s)
		}
		idx[s] = append(idx[s], i)
	}
	return shards, idx
}

// fanOut serves a request that names groups of several shards: each
// shard gets the part it owns (sub builds it from the indexes of its
// names), and the answers are merged back in request order (results
// takes a part's per-group results, build makes the whole response).
func fanOut[E any](c *Coordinator, req Request, names []string, sub func(idx []int) kmsg.Request, results func(kmsg.Response) []E, build func([]E) kmsg.Response) func() kmsg.Response {
	shards, idx := c.split(names)
	waits := make([]func() kmsg.Response, len(shards))
	for k, s := range shards {
		req.Msg = sub(idx[s])
		waits[k] = c.submit(s, req)
	}
	return func() kmsg.Response {
		out := make([]E, len(names))
		for k, s := range shards {
			part := results(waits[k]())
			for j, i := range idx[s] {
				out[i] = part[j]
			}
		}
		return build(out)
	}
}

func (c *Coordinator) describeGroups(req Request, r *kmsg.DescribeGroupsRequest) func() kmsg.Response {
	return fanOut(c, req, r.Groups,
		func(idx []int) kmsg.Request {
			sub := *r
			sub.Groups = pick(r.Groups, idx)
			return &sub
		},
		func(resp kmsg.Response) []kmsg.DescribeGroupsResponseGroup {
			return resp.(*kmsg.DescribeGroupsResponse).Groups
		},
		func(gs []kmsg.DescribeGroupsResponseGroup) kmsg.Response {
			resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
			resp.Version, resp.Groups = r.Version, gs
			return resp
		})
}

func (c *Coordinator) consumerDescribe(req Request, r *kmsg.ConsumerGroupDescribeRequest) func() kmsg.Response {
	return fanOut(c, req, r.Groups,
		func(idx []int) kmsg.Request {
			sub := *r
			sub.Groups = pick(r.Groups, idx)
			return &sub
		},
		func(resp kmsg.Response) []kmsg.ConsumerGroupDescribeResponseGroup {
			return resp.(*kmsg.ConsumerGroupDescribeResponse).Groups
		},
		func(gs []kmsg.ConsumerGroupDescribeResponseGroup) kmsg.Response {
			resp := r.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
			resp.Version, resp.Groups = r.Version, gs
			return resp
		})
}

func (c *Coordinator) deleteGroups(req Request, r *kmsg.DeleteGroupsRequest) func() kmsg.Response {
	// Duplicates are answered once, as Kafka collapses them.
	var names []string
	seen := map[string]bool{}
	for _, g := range r.Groups {
		if !seen[g] {
			seen[g] = true
			names = append(names, g)
		}
	}
	return fanOut(c, req, names,
		func(idx []int) kmsg.Request {
			sub := *r
			sub.Groups = pick(names, idx)
			return &sub
		},
		func(resp kmsg.Response) []kmsg.DeleteGroupsResponseGroup {
			return resp.(*kmsg.DeleteGroupsResponse).Groups
		},
		func(gs []kmsg.DeleteGroupsResponseGroup) kmsg.Response {
			resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
			resp.Version, resp.Groups = r.Version, gs
			return resp
		})
}

func (c *Coordinator) offsetFetchGroups(req Request, r *kmsg.OffsetFetchRequest) func() kmsg.Response {
	names := make([]string, len(r.Groups))
	for i, g := range r.Groups {
		names[i] = g.Group
	}
	return fanOut(c, req, names,
		func(idx []int) kmsg.Request {
			sub := *r
			sub.Groups = pick(r.Groups, idx)
			return &sub
		},
		func(resp kmsg.Response) []kmsg.OffsetFetchResponseGroup {
			return resp.(*kmsg.OffsetFetchResponse).Groups
		},
		func(gs []kmsg.OffsetFetchResponseGroup) kmsg.Response {
			resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.Version, resp.Groups = r.Version, gs
			return resp
		})
}

func (c *Coordinator) listGroups(req Request, r *kmsg.ListGroupsRequest) func() kmsg.Response {
	waits := make([]func() kmsg.Response, len(c.shards))
	for i := range c.shards {
		waits[i] = c.submit(i, req)
	}
	return func() kmsg.Response {
		resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.Version = r.Version
		resp.Groups = []kmsg.ListGroupsResponseGroup{}
		for _, w := range waits {
			part := w().(*kmsg.ListGroupsResponse)
			if part.ErrorCode != 0 && resp.ErrorCode == 0 {
				resp.ErrorCode = part.ErrorCode
			}
			resp.Groups = append(resp.Groups, part.Groups...)
		}
		return resp
	}
}

// TopicsDeleted removes every group's committed offsets of the deleted
// topics and returns once that is durable (as Kafka does on topic
// deletion), so that a topic created again under the same name starts
// with none.
func (c *Coordinator) TopicsDeleted(topics []string) {
	if len(topics) == 0 {
		return
	}
	var waits []<-chan Reply
	for _, s := range c.shards {
		if ch, err := s.Submit(Request{DeletedTopics: topics}); err == nil {
			waits = append(waits, ch)
		}
	}
	for _, ch := range waits {
		<-ch
	}
}

// ReconcileTopics deletes committed offsets of topics that are not in
// live (name → id) or were committed to an earlier topic of the same
// name, and returns once that is durable. The server calls it at start-up
// with every topic it has, which finishes a topic deletion that a crash
// interrupted between the topic and its offsets.
func (c *Coordinator) ReconcileTopics(live map[string][16]byte) {
	if live == nil {
		live = map[string][16]byte{}
	}
	var waits []<-chan Reply
	for _, s := range c.shards {
		if ch, err := s.Submit(Request{LiveTopics: live}); err == nil {
			waits = append(waits, ch)
		}
	}
	for _, ch := range waits {
		<-ch
	}
}

// failReply answers a Kafka request the shard could not complete.
func failReply(req Request, code int16) Reply {
	return Reply{Resp: ErrorResponse(req.Msg, code)}
}

func pick[T any](all []T, idx []int) []T {
	out := make([]T, len(idx))
	for j, i := range idx {
		out[j] = all[i]
	}
	return out
}

// ErrorResponse answers req with code everywhere a response of its kind
// carries an error: what a shard that cannot serve a request sends
// (COORDINATOR_NOT_AVAILABLE, retriable).
func ErrorResponse(req kmsg.Request, code int16) kmsg.Response {
	if req == nil {
		return nil // an internal request (TopicsDeleted)
	}
	v := req.GetVersion()
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.Version, resp.ErrorCode, resp.Generation, resp.MemberID = v, code, -1, r.MemberID
		if v < 7 {
			resp.Protocol = new(string)
		}
		return resp
	case *kmsg.SyncGroupRequest:
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.Version, resp.ErrorCode = v, code
		return resp
	case *kmsg.HeartbeatRequest:
		resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.Version, resp.ErrorCode = v, code
		return resp
	case *kmsg.LeaveGroupRequest:
		resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.Version, resp.ErrorCode = v, code
		return resp
	case *kmsg.OffsetCommitRequest:
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.Version = v
		for _, t := range r.Topics {
			rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.OffsetFetchRequest:
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.Version, resp.ErrorCode = v, code
		if v < 2 {
			// v0–1 have no top-level error: it goes in every partition.
			for _, t := range r.Topics {
				rt := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1, Metadata: new(string), ErrorCode: code})
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		for _, g := range r.Groups {
			resp.Groups = append(resp.Groups, kmsg.OffsetFetchResponseGroup{Group: g.Group, ErrorCode: code})
		}
		return resp
	case *kmsg.OffsetDeleteRequest:
		resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.Version, resp.ErrorCode = v, code
		return resp
	case *kmsg.DescribeGroupsRequest:
		resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
		resp.Version = v
		for _, g := range r.Groups {
			resp.Groups = append(resp.Groups, kmsg.DescribeGroupsResponseGroup{Group: g, ErrorCode: code, AuthorizedOperations: -2147483648})
		}
		return resp
	case *kmsg.ListGroupsRequest:
		resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.Version, resp.ErrorCode = v, code
		return resp
	case *kmsg.DeleteGroupsRequest:
		resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
		resp.Version = v
		for _, g := range r.Groups {
			resp.Groups = append(resp.Groups, kmsg.DeleteGroupsResponseGroup{Group: g, ErrorCode: code})
		}
		return resp
	}
	resp := req.ResponseKind()
	resp.SetVersion(v)
	return resp
}
