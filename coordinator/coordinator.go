package coordinator

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"sync"

	"github.com/cohort-dev/cohort/assign"
	"github.com/cohort-dev/cohort/coordinator/global"
	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Coordinator is the group coordinator: it routes each group request to
// the shard that owns the group, splits requests that name groups of
// several shards, and merges their answers.
//
// A Go broker or gateway can embed it: Start it on a store and hand
// Handle decoded requests.
type Coordinator struct {
	cfg     Config
	n       int // the shard count, fixed when the store was created
	standby bool
	set     *ShardSet
	topics  func(tenant string) *machine.Catalog
	// counts is every shard's count of each tenant's groups
	// (groupcount.go).
	counts *groupCounts
	// Inspect's last reading, to which each shard adds only what changed
	// since (groups.InspectDelta): every group by tenant then group,
	// each shard's token and how many groups it had.
	inspectMu sync.Mutex
	reading   []groups.Summary
	inspected map[uint16]inspectedShard
	tokens    uint64
}

// inspectAnswer is a shard's answer to Inspect.
type inspectAnswer struct {
	shard uint16
	token uint64
	d     groups.InspectDelta
}

// inspectedShard is what Inspect last read of a shard.
type inspectedShard struct {
	token uint64
	count int
}

// Options are the runtime parts of a coordinator.
type Options struct {
	Store  store.Store
	Clock  Clock // nil: the system clock
	Logger *slog.Logger
	// Topics returns a tenant's topics, by the names its clients know
	// them by, for offset commits to check and KIP-848 consumer groups to
	// resolve subscriptions against. Every tenant's catalog of one topic
	// state has the same Version. Nil: no topics (consumer groups get
	// empty assignments).
	Topics func(tenant string) *machine.Catalog
	// Observer receives the runtime's events (batches written, shards
	// loaded and unloaded) and the machines' group events. Nil: none.
	Observer observe.Observer
	// Standby starts the coordinator holding no shard: the caller Loads
	// the shards it owns (cluster mode). False: every shard is loaded.
	Standby bool
	// Global is the global unit, whose meta keeps the shard count a data
	// directory was created with (record.MetaCoordinatorShards). Nil:
	// Start runs one on Store for that, and stops it.
	Global *GlobalUnit
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
	n, err := shardCount(opts, cfg.Shards)
	if err != nil {
		return nil, err
	}
	if n != cfg.Shards {
		opts.Logger.Info("using the data directory's coordinator shard count", "shards", n, "configured", cfg.Shards)
		cfg.Shards = n
	}
	c := &Coordinator{cfg: cfg, n: n, standby: opts.Standby, topics: opts.Topics}
	var assignors []assign.Assignor
	for _, n := range cfg.ConsumerAssignors {
		a, _ := cfg.assignor(n)
		assignors = append(assignors, a)
	}
	logger := opts.Logger.With("component", "coordinator")
	// Every shard's count of each tenant's groups, for the
	// organisations' max_groups (groups/limits.go).
	c.counts = newGroupCounts(n)
	counts := c.counts
	c.set = NewShardSet(ShardSetConfig{
		Runtime: func(id uint16) RuntimeConfig {
			mcfg := groups.Config{
				Shard:                  id,
				MinSessionTimeout:      cfg.MinSessionTimeout,
				MaxSessionTimeout:      cfg.MaxSessionTimeout,
				MaxSize:                cfg.MaxSize,
				MaxPendingMembers:      cfg.MaxPendingMembers,
				InitialDelay:           cfg.InitialRebalanceDelay,
				InitialQuiet:           cfg.InitialRebalanceQuiet,
				InitialAdaptive:        cfg.InitialRebalanceAdaptive,
				OffsetMetadataMaxBytes: cfg.OffsetMetadataMaxBytes,
				Retention:              cfg.OffsetsRetention,
				RetentionCheck:         cfg.OffsetsRetentionCheckInterval,

				ConsumerSessionTimeout:    cfg.ConsumerSessionTimeout,
				ConsumerHeartbeatInterval: cfg.ConsumerHeartbeatInterval,
				AssignmentInterval:        cfg.ConsumerAssignmentInterval,
				ConsumerMaxSize:           cfg.ConsumerMaxSize,
				Assignors:                 assignors,
				MigrationPolicy:           cfg.MigrationPolicy,

				ShareSessionTimeout:    cfg.ShareSessionTimeout,
				ShareHeartbeatInterval: cfg.ShareHeartbeatInterval,
				ShareMaxSize:           cfg.ShareMaxSize,

				Limits: cfg.TenantLimits,
				Counts: counts,
			}
			// A fresh seed for every load, also when a shard loads
			// again after it was given up: ids handed out before must
			// not be handed out again.
			_, _ = rand.Read(mcfg.Seed[:])
			// A load counts the shard's groups again: its machine
			// publishes them once Loaded (groups.Config.Counts). Here,
			// not in New, which the runtime may call again to rebuild
			// the machine for its invariant check.
			counts.reset(id)
			rc := RuntimeConfig{
				Store: opts.Store,
				New:   func() Machine { return groups.New(mcfg) },
				Fail:  failReply,
			}
			if !cfg.NoOffsetsTopic {
				mcfg.OffsetsTopicBlock = offsetstopic.ReserveBlock
				// A new partition for every load: a reload starts
				// over from the store.
				// Lazy: it holds the shard's records only while
				// someone reads them, and reads them from the store
				// when a reader comes.
				rc.Topic = offsetstopic.NewPartition(id, offsetstopic.Options{
					TombstoneRetention: cfg.OffsetsTopicTombstoneRetention,
					Idle:               cfg.OffsetsTopicIdle,
					Scan: func(fn func(k, v []byte) error) error {
						return opts.Store.Scan(record.ShardPrefix(id), fn)
					},
					Reserve: func(n int64) {
						go c.set.Submit(context.Background(), id, Request{Cmd: groups.ReserveCmd{Records: n}})
					},
				})
			}
			return rc
		},
		Observer: opts.Observer,
		Clock:    opts.Clock,
		Logger:   logger,
	})
	if opts.Standby {
		return c, nil
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = c.set.Load(uint16(i)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.set.Close()
		return nil, err
	}
	return c, nil
}

// shardCount returns the stored shard count, storing want if there is none.
func shardCount(opts Options, want int) (int, error) {
	u := opts.Global
	if u == nil {
		var err error
		if u, err = StartGlobal(GlobalConfig{Store: opts.Store, Logger: opts.Logger}); err != nil {
			return 0, err
		}
		defer u.Close()
	}
	out, err := u.Do(context.Background(), global.EnsureMeta{Name: record.MetaCoordinatorShards, Value: []byte(strconv.Itoa(want))})
	if err != nil {
		return 0, fmt.Errorf("coordinator: shard count: %w", err)
	}
	v := out.([]byte)
	n, perr := strconv.Atoi(string(v))
	if perr != nil || n < 1 || n >= int(record.AssignerShard) {
		return 0, fmt.Errorf("coordinator: corrupt %s value %q", record.MetaCoordinatorShards, v)
	}
	return n, nil
}

// Close unloads every shard; requests in flight are answered
// NOT_COORDINATOR.
func (c *Coordinator) Close() { c.set.Close() }

// Shards returns the shard count: a group's shard is ShardFor of it.
func (c *Coordinator) Shards() int { return c.n }

// Load loads shard i from the store and serves it, returning once it
// serves (meanwhile its requests get COORDINATOR_LOAD_IN_PROGRESS).
// Loading a shard already held does nothing.
func (c *Coordinator) Load(i int) error {
	if i < 0 || i >= c.n {
		return fmt.Errorf("coordinator: shard %d: there are %d", i, c.n)
	}
	return c.set.Load(uint16(i))
}

// Unload stops serving shard i: the writes under way finish, requests in
// flight get NOT_COORDINATOR, as do later ones until it is loaded again.
func (c *Coordinator) Unload(i int) {
	if i >= 0 && i < c.n {
		c.set.Unload(uint16(i))
		c.counts.reset(uint16(i)) // its groups are another node's now
	}
}

// Ready reports why the coordinator does not serve every shard it should
// (nil: it does): a shard loading or waiting to load again after a failed
// write, or, unless it started Standby, a shard it does not hold.
func (c *Coordinator) Ready() error {
	held, serving := c.set.Serving()
	switch {
	case serving < held:
		return fmt.Errorf("%d of %d coordinator shards loading", held-serving, held)
	case !c.standby && held < c.n:
		return fmt.Errorf("%d of %d coordinator shards not held", c.n-held, c.n)
	}
	return nil
}

// Held returns the shards this coordinator holds, in order.
func (c *Coordinator) Held() []int {
	var out []int
	for _, id := range c.set.Held() {
		out = append(out, int(id))
	}
	return out
}

// OffsetsTopic reports whether the coordinator serves __consumer_offsets
// (Config.NoOffsetsTopic unset): one partition per shard.
func (c *Coordinator) OffsetsTopic() bool { return !c.cfg.NoOffsetsTopic }

// OffsetsPartition returns partition i of __consumer_offsets: shard i's,
// while this coordinator serves the shard (loaded, not given up), else
// nil (another node's, or loading).
func (c *Coordinator) OffsetsPartition(i int) *offsetstopic.Partition {
	if c.cfg.NoOffsetsTopic || i < 0 || i >= c.n {
		return nil
	}
	rt := c.set.active(uint16(i))
	if rt == nil {
		return nil
	}
	return rt.cfg.Topic
}

// ShardFor returns the shard that owns a tenant's group.
func (c *Coordinator) ShardFor(tenant, group string) int {
	h := fnv.New32a()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(group))
	return int(h.Sum32() % uint32(c.n))
}

// Handle starts serving a group request and returns a function that
// waits for its response. Tenant, ClientID and ClientHost of req identify
// the organisation and the connection; ID is ignored.
//
// It serves every API of groups.APIs: the API's registration names the
// groups a request is for, and a request naming groups of several shards
// is split and its answers merged in request order.
//
// ctx travels with the request to its reply and to the observer's events
// it causes; it never reaches the pure machines, and cancelling it does
// not withdraw a request already handed over.
func (c *Coordinator) Handle(ctx context.Context, req Request) func() kmsg.Response {
	if c.topics != nil && req.Topics == nil {
		req.Topics = c.topics(req.Tenant)
	}
	api, ok := groups.Lookup(req.Msg.Key())
	if !ok {
		resp := req.Msg.ResponseKind()
		resp.SetVersion(req.Msg.GetVersion())
		return func() kmsg.Response { return resp }
	}
	if api.Groups == nil { // every shard this node holds
		held := c.set.Held()
		waits := make([]func() kmsg.Response, len(held))
		for i, id := range held {
			waits[i] = c.submit(ctx, api, int(id), req)
		}
		return func() kmsg.Response {
			parts := make([]kmsg.Response, len(waits))
			for i, w := range waits {
				parts[i] = w()
			}
			return api.Merge(req.Msg, make([][]int, len(parts)), parts)
		}
	}
	names := api.Groups(req.Msg)
	shards, idx := c.split(req.Tenant, names)
	if len(shards) == 1 {
		return c.submit(ctx, api, shards[0], req)
	}
	waits := make([]func() kmsg.Response, len(shards))
	parts := make([][]int, len(shards))
	for k, s := range shards {
		part := req
		part.Msg = api.Split(req.Msg, idx[s])
		parts[k] = idx[s]
		waits[k] = c.submit(ctx, api, s, part)
	}
	return func() kmsg.Response {
		resps := make([]kmsg.Response, len(waits))
		for k, w := range waits {
			resps[k] = w()
		}
		return api.Merge(req.Msg, parts, resps)
	}
}

// submit sends req to shard i; a shard this node does not serve answers
// NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) submit(ctx context.Context, api *groups.API, i int, req Request) func() kmsg.Response {
	ch, code := c.set.Submit(ctx, uint16(i), req)
	if code != 0 {
		resp := api.Error(req.Msg, code)
		return func() kmsg.Response { return resp }
	}
	return func() kmsg.Response { return (<-ch).Resp }
}

// split groups the indexes of names by shard, in shard order of first
// appearance. A request that names no group goes to the shard of "".
func (c *Coordinator) split(tenant string, names []string) (shards []int, idx map[int][]int) {
	idx = map[int][]int{}
	if len(names) == 0 {
		s := c.ShardFor(tenant, "")
		return []int{s}, map[int][]int{s: nil}
	}
	for i, n := range names {
		s := c.ShardFor(tenant, n)
		if _, ok := idx[s]; !ok {
			shards = append(shards, s)
		}
		idx[s] = append(idx[s], i)
	}
	return shards, idx
}

// TopicsDeleted removes the committed offsets of the tenant's deleted
// topics (by the names its clients know them by) from every group of the
// tenant and returns once that is durable (as Kafka does on topic
// deletion), so that a topic created again under the same name starts
// with none.
func (c *Coordinator) TopicsDeleted(tenant string, topics []string) {
	if len(topics) == 0 {
		return
	}
	var waits []<-chan Reply
	for _, id := range c.set.Held() {
		if ch, code := c.set.Submit(context.Background(), id, Request{Cmd: groups.DeleteTopicsCmd{Tenant: tenant, Topics: topics}}); code == 0 {
			waits = append(waits, ch)
		}
	}
	for _, ch := range waits {
		<-ch
	}
}

// ReconcileTopics deletes committed offsets of topics that are not in
// live (tenant → name → id) or were committed to an earlier topic of the
// same name, and returns once that is durable. The server calls it at
// start-up with every topic it has, which finishes a topic deletion that
// a crash interrupted between the topic and its offsets.
func (c *Coordinator) ReconcileTopics(live map[string]map[string][16]byte) {
	if live == nil {
		live = map[string]map[string][16]byte{}
	}
	var waits []<-chan Reply
	for _, id := range c.set.Held() {
		if ch, code := c.set.Submit(context.Background(), id, Request{Cmd: groups.ReconcileTopicsCmd{Live: live}}); code == 0 {
			waits = append(waits, ch)
		}
	}
	for _, ch := range waits {
		<-ch
	}
}

// Inspect returns a summary of every group of every shard this
// coordinator serves, all tenants, sorted by tenant then group (groups of
// a shard still loading are left out). It is for the admin API and the lag
// tracker: it carries what no Kafka response does (the cgp_ id, commit
// times). Each shard hands over only the groups that changed since the
// last call (groups.InspectDelta), which are merged into the last
// reading: a sampler reading a million quiet groups every few seconds
// copies none of them when none changed, and each summary once (into the
// new reading) when some did. The reading returned is shared with the
// next call's and must not be changed.
func (c *Coordinator) Inspect(ctx context.Context) ([]groups.Summary, error) {
	r, err := c.InspectInPlace(ctx, nil)
	return r.Groups, err
}

// InspectInPlace is Inspect for a reader that takes what changed in
// place (issue 34: a reading costs what changed): when no group came or
// went since the last reading, the summaries that changed are written
// into the last reading's slice itself, holding mu (the reader's lock
// over it), and the reading says which (groups.Reading). Otherwise, or
// with mu nil, a changed reading is a new slice, as Inspect's. A
// coordinator's readings are for one reader: another's slice would be
// changed under it.
func (c *Coordinator) InspectInPlace(ctx context.Context, mu sync.Locker) (groups.Reading, error) {
	c.inspectMu.Lock()
	defer c.inspectMu.Unlock()
	if c.inspected == nil {
		c.inspected = map[uint16]inspectedShard{}
	}
	held := c.set.Held()
	ask := func(ids []uint16, full bool) ([]inspectAnswer, error) {
		type wait struct {
			shard uint16
			token uint64
			ch    <-chan Reply
		}
		var waits []wait
		for _, id := range ids {
			c.tokens++
			cmd := groups.InspectCmd{Token: c.tokens}
			if prev, ok := c.inspected[id]; ok && !full {
				cmd.Since = prev.token
			}
			if ch, code := c.set.Submit(ctx, id, Request{Cmd: cmd}); code == 0 {
				waits = append(waits, wait{id, cmd.Token, ch})
			}
		}
		var out []inspectAnswer
		for _, w := range waits {
			select {
			case r := <-w.ch:
				if d, ok := r.Out.(groups.InspectDelta); ok {
					out = append(out, inspectAnswer{w.shard, w.token, d})
				}
			case <-ctx.Done():
				// A shard whose answer was not read has moved on from
				// its token: it answers the next call in full.
				return nil, ctx.Err()
			}
		}
		return out, nil
	}
	answers, err := ask(held, false)
	if err != nil {
		return groups.Reading{}, err
	}
	// A shard that answered in full replaces its groups; one no longer
	// held, or one that did not answer, loses them until it answers.
	drop := map[uint16]bool{}
	for id := range c.inspected {
		drop[id] = true
	}
	var changed []groups.Summary
	apply := func(answers []inspectAnswer) {
		for _, a := range answers {
			prev, known := c.inspected[a.shard]
			if a.d.Full || !known {
				drop[a.shard] = true
				prev.count = 0
			} else {
				delete(drop, a.shard)
			}
			c.inspected[a.shard] = inspectedShard{token: a.token, count: prev.count}
		}
		changed = mergeRuns(answers)
	}
	apply(answers)
	reading := c.reading
	if len(drop) > 0 {
		reading = slices.DeleteFunc(slices.Clone(reading), func(s groups.Summary) bool {
			return drop[uint16(c.ShardFor(s.Tenant, s.Group))]
		})
		answered := map[uint16]bool{}
		for _, a := range answers {
			answered[a.shard] = true
		}
		for id := range drop {
			if !answered[id] {
				// Not held, or not answering: read in full when it does.
				delete(c.inspected, id)
			}
		}
	}
	if mu != nil && len(drop) == 0 && len(reading) > 0 {
		// No shard answered in full: if every changed group is in the
		// last reading, and no shard has fewer groups than it has
		// there (a deletion), the reading's groups are as they were.
		if at, ok := placesOf(reading, changed); ok && c.countsHold(answers) {
			if len(at) > 0 {
				mu.Lock()
				for k, i := range at {
					reading[i] = changed[k]
				}
				mu.Unlock()
			}
			return groups.Reading{Groups: reading, InPlace: true, Changed: at}, nil
		}
	}
	reading, added := mergeSummaries(reading, changed)
	// Count each shard's groups: one that lost a group since (a
	// deletion, which a delta does not name) is read again in full.
	counts := map[uint16]int{}
	for _, a := range answers {
		counts[a.shard] = c.inspected[a.shard].count
	}
	for _, s := range added {
		counts[uint16(c.ShardFor(s.Tenant, s.Group))]++
	}
	var again []uint16
	for _, a := range answers {
		sh := c.inspected[a.shard]
		sh.count = counts[a.shard]
		c.inspected[a.shard] = sh
		if sh.count != a.d.Count {
			again = append(again, a.shard)
		}
	}
	if len(again) > 0 {
		answers, err := ask(again, true)
		if err != nil {
			return groups.Reading{}, err
		}
		redo := map[uint16]bool{}
		for _, a := range answers {
			redo[a.shard] = true
			c.inspected[a.shard] = inspectedShard{token: a.token, count: len(a.d.Changed)}
		}
		reading = slices.DeleteFunc(slices.Clone(reading), func(s groups.Summary) bool {
			return redo[uint16(c.ShardFor(s.Tenant, s.Group))]
		})
		changed = mergeRuns(answers) // a new slice: the last merge may have made the old one the reading
		reading, _ = mergeSummaries(reading, changed)
	}
	c.reading = slices.Clip(reading)
	return groups.Reading{Groups: c.reading}, nil
}

// countsHold reports whether each shard that answered has as many
// groups as the last reading has of it (a delta names no deletion).
func (c *Coordinator) countsHold(answers []inspectAnswer) bool {
	for _, a := range answers {
		if c.inspected[a.shard].count != a.d.Count {
			return false
		}
	}
	return true
}

// placesOf returns the place in old (sorted by tenant, then group) of
// each of changed (sorted likewise), ascending; ok is false if one of
// them is not in old.
func placesOf(old, changed []groups.Summary) (at []int32, ok bool) {
	at = make([]int32, 0, len(changed))
	i := 0
	for _, c := range changed {
		k, found := slices.BinarySearchFunc(old[i:], c, compareSummaries)
		if !found {
			return nil, false
		}
		i += k
		at = append(at, int32(i))
		i++
	}
	return at, true
}

// mergeRuns is the shards' changed summaries, each shard's sorted by
// tenant then group, merged into one slice in that order: a reading in
// full of a million groups is sixteen sorted runs, which a sort of the
// whole took 0.9 s of a core to put in order (ten million offsets'
// first reading after a load), and a merge takes a pass. A run out of
// order (which no shard answers) is sorted first.
func mergeRuns(answers []inspectAnswer) []groups.Summary {
	var runs [][]groups.Summary
	n := 0
	for _, a := range answers {
		if r := a.d.Changed; len(r) > 0 {
			if !slices.IsSortedFunc(r, compareSummaries) {
				r = slices.Clone(r)
				slices.SortFunc(r, compareSummaries)
			}
			runs = append(runs, r)
			n += len(r)
		}
	}
	if len(runs) == 0 {
		return nil
	}
	out := make([]groups.Summary, 0, n) // sized once: a full reading is every group
	// A binary heap of the runs by their first summary.
	less := func(i, j int) bool { return compareSummaries(runs[i][0], runs[j][0]) < 0 }
	down := func(i int) {
		for {
			m := i
			if l := 2*i + 1; l < len(runs) && less(l, m) {
				m = l
			}
			if r := 2*i + 2; r < len(runs) && less(r, m) {
				m = r
			}
			if m == i {
				return
			}
			runs[i], runs[m] = runs[m], runs[i]
			i = m
		}
	}
	for i := len(runs)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(runs) > 0 {
		out = append(out, runs[0][0])
		if runs[0] = runs[0][1:]; len(runs[0]) == 0 {
			last := len(runs) - 1
			runs[0] = runs[last]
			runs = runs[:last]
		}
		down(0)
	}
	return out
}

func compareSummaries(a, b groups.Summary) int {
	return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Group, b.Group))
}

// mergeSummaries is old (sorted by tenant, then group) with each of
// changed (sorted likewise) in its place, replacing the group's old
// summary or added (added lists those). Old is not changed: with changes
// the result is a new slice, without them old itself.
func mergeSummaries(old, changed []groups.Summary) (out, added []groups.Summary) {
	switch {
	case len(changed) == 0:
		return old, nil
	case len(old) == 0:
		return changed, changed // a full reading: no copy of a million groups
	}
	// Each changed summary's place is searched for, and the old ones
	// before it copied at once: a reading of a million groups, a
	// hundred of them changed, compares names a hundred times over, not
	// a million.
	out = make([]groups.Summary, 0, len(old)+len(changed))
	i := 0
	for _, c := range changed {
		k, found := slices.BinarySearchFunc(old[i:], c, compareSummaries)
		out = append(out, old[i:i+k]...)
		out = append(out, c)
		i += k
		if found {
			i++
		} else {
			added = append(added, c)
		}
	}
	return append(out, old[i:]...), added
}

// InspectGroup returns the summary of one tenant's group, from its shard
// alone; ok is false if this coordinator does not have it (its shard is
// another node's, loading, or the group does not exist).
func (c *Coordinator) InspectGroup(ctx context.Context, tenant, group string) (sum groups.Summary, ok bool, err error) {
	ch, code := c.set.Submit(ctx, uint16(c.ShardFor(tenant, group)), Request{Cmd: groups.InspectCmd{Only: &groups.GroupRef{Tenant: tenant, Group: group}}})
	if code != 0 {
		return groups.Summary{}, false, nil
	}
	select {
	case r := <-ch:
		if sums, _ := r.Out.([]groups.Summary); len(sums) == 1 {
			return sums[0], true, nil
		}
		return groups.Summary{}, false, nil
	case <-ctx.Done():
		return groups.Summary{}, false, ctx.Err()
	}
}

// failReply answers a request the shard could not complete: a Kafka
// request with its API's error response, a command with nothing.
func failReply(req Request, code int16) Reply {
	if req.Msg == nil {
		return Reply{}
	}
	return Reply{Resp: ErrorResponse(req.Msg, code)}
}

// ErrorResponse answers a group API request with code everywhere a
// response of its kind carries an error: what a shard that cannot serve a
// request sends (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, ...).
func ErrorResponse(req kmsg.Request, code int16) kmsg.Response {
	if api, ok := groups.Lookup(req.Key()); ok {
		return api.Error(req, code)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	return resp
}
