package groups_test

// The tenancy property (issue 15): random requests from three tenants
// (organisations) that use the same group names, on one shard, with
// restarts. Whatever one tenant does — commit, delete offsets, delete a
// group, join, heartbeat — no other tenant's answer changes: every
// acknowledged commit is read back by its own tenant only, a tenant's
// lists and descriptions name only the groups and members it made, and
// a commit to a group name another tenant has members in is served as
// for an empty group.

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	tenancyTenants = []string{"", "acme", "globex"}
	tenancyGroups  = []string{"orders", "billing", "Orders"}
)

const tenancyPartitions = 3

// tenancyModel is what each tenant should see.
type tenancyModel struct {
	// offsets are the acknowledged commits: tenant → group → partition.
	offsets map[string]map[string]map[int32]int64
	// members are the member ids each tenant's joins and heartbeats made,
	// by group.
	members map[string]map[string]map[string]bool
	// groups are the groups each tenant may see in a listing: made by a
	// commit, join or heartbeat of its own, and not deleted since.
	groups map[string]map[string]bool
}

func TestPropertyTenancy(t *testing.T) {
	seeds := 120
	if testing.Short() {
		seeds = 20
	}
	for seed := range int64(seeds) {
		if msg := runTenancy(t, seed); msg != "" {
			t.Fatalf("seed %d: %s", seed, msg)
		}
	}
}

func runTenancy(t *testing.T, seed int64) (msg string) {
	rng := rand.New(rand.NewPCG(uint64(seed), 15))
	h := newHarness(t, testConfig())
	h.guardEvery = propGuardEvery
	mod := tenancyModel{offsets: map[string]map[string]map[int32]int64{}, members: map[string]map[string]map[string]bool{}, groups: map[string]map[string]bool{}}
	for _, tn := range tenancyTenants {
		mod.offsets[tn], mod.members[tn], mod.groups[tn] = map[string]map[int32]int64{}, map[string]map[string]bool{}, map[string]bool{}
	}
	doAs := func(req kmsg.Request, tenant string) kmsg.Response {
		id := h.sendAs(req, tenant, "client-"+tenant)
		r, ok := h.reply(id)
		if !ok {
			return nil
		}
		return r
	}
	for step := range 300 {
		tn := tenancyTenants[rng.IntN(len(tenancyTenants))]
		g := tenancyGroups[rng.IntN(len(tenancyGroups))]
		switch op := rng.IntN(10); {
		case op < 3: // a simple commit (generation -1)
			req := kmsg.NewPtrOffsetCommitRequest()
			req.SetVersion(7)
			req.Group, req.Generation = g, -1
			p, off := int32(rng.IntN(tenancyPartitions)), int64(rng.IntN(1000))
			req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "events", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: p, Offset: off}}}}
			resp := doAs(req, tn).(*kmsg.OffsetCommitResponse)
			code := resp.Topics[0].Partitions[0].ErrorCode
			busy := len(mod.members[tn][g]) > 0
			switch {
			case code == 0:
				if busy {
					return fmt.Sprintf("step %d: tenant %q committed to %s with generation -1 while its members are in it", step, tn, g)
				}
				if mod.offsets[tn][g] == nil {
					mod.offsets[tn][g] = map[int32]int64{}
				}
				mod.offsets[tn][g][p] = off
				mod.groups[tn][g] = true
			case !busy:
				return fmt.Sprintf("step %d: tenant %q's commit to %s (no members of its own) refused %d: another tenant's group leaked in", step, tn, g, code)
			}
		case op < 5: // read back, every tenant's view of g
			for _, other := range tenancyTenants {
				req := kmsg.NewPtrOffsetFetchRequest()
				req.SetVersion(7)
				req.Group = g
				resp := doAs(req, other).(*kmsg.OffsetFetchResponse)
				got := map[int32]int64{}
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if rp.Offset >= 0 {
							got[rp.Partition] = rp.Offset
						}
					}
				}
				want := mod.offsets[other][g]
				if len(want) == 0 {
					want = map[int32]int64{}
				}
				if !maps.Equal(got, want) {
					return fmt.Sprintf("step %d: tenant %q fetches %s offsets %v, want %v", step, other, g, got, want)
				}
			}
		case op < 6: // delete the group (an empty one only)
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.Groups = []string{g}
			resp := doAs(req, tn).(*kmsg.DeleteGroupsResponse)
			if resp.Groups[0].ErrorCode == 0 {
				delete(mod.offsets[tn], g)
				delete(mod.groups[tn], g)
			}
		case op < 8: // a consumer-protocol member joins (or heartbeats again)
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group = g
			req.MemberID = fmt.Sprintf("m-%s-%d-%d", tn, seed, step)
			req.RebalanceTimeoutMillis = 30000
			req.SubscribedTopicNames = []string{"events"}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			r := doAs(req, tn)
			if r == nil {
				continue
			}
			if resp := r.(*kmsg.ConsumerGroupHeartbeatResponse); resp.ErrorCode == 0 {
				if mod.members[tn][g] == nil {
					mod.members[tn][g] = map[string]bool{}
				}
				mod.members[tn][g][req.MemberID] = true
				mod.groups[tn][g] = true
			}
		case op < 9: // every tenant describes and lists
			for _, other := range tenancyTenants {
				d := kmsg.NewPtrConsumerGroupDescribeRequest()
				d.Groups = []string{g}
				dg := doAs(d, other).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
				for _, m := range dg.Members {
					if !mod.members[other][g][m.MemberID] {
						return fmt.Sprintf("step %d: tenant %q's description of %s shows member %s, not its own", step, other, g, m.MemberID)
					}
				}
				l := kmsg.NewPtrListGroupsRequest()
				var listed []string
				for _, lg := range doAs(l, other).(*kmsg.ListGroupsResponse).Groups {
					listed = append(listed, lg.Group)
				}
				var want []string
				for name := range mod.groups[other] {
					want = append(want, name)
				}
				slices.Sort(listed)
				slices.Sort(want)
				if !slices.Equal(listed, want) {
					return fmt.Sprintf("step %d: tenant %q lists %v, want %v", step, other, listed, want)
				}
			}
		default: // time passes (members' sessions expire), or a restart
			if rng.IntN(3) == 0 {
				h.restart()
			} else {
				h.advance(time.Duration(rng.IntN(60)) * time.Second)
			}
			// Members whose session ran out are gone; a group that lost
			// its last member keeps its offsets and stays listed.
			for _, other := range tenancyTenants {
				for name, ms := range mod.members[other] {
					d := kmsg.NewPtrConsumerGroupDescribeRequest()
					d.Groups = []string{name}
					live := map[string]bool{}
					for _, m := range doAs(d, other).(*kmsg.ConsumerGroupDescribeResponse).Groups[0].Members {
						live[m.MemberID] = true
					}
					for id := range ms {
						if !live[id] {
							delete(ms, id)
						}
					}
				}
			}
		}
	}
	h.guardEvery = 1
	h.guard()
	return ""
}
