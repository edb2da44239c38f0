package groups_test

// Scenario commands for KIP-848 consumer groups and for the group events
// (the file format is in scenario_test.go):
//
//	topics NAME=PARTITIONS…    the broker's topics from now on, sent with
//	                            every request (ids by order of first mention)
//	cg A [epoch=N] [topics=t[,u…]] [regex=R] [owned=t/0,t/1,u/0|-]
//	     [instance=I] [assignor=A] [rebalance=30s] [leave|leave=static]
//	     [v=1] [group=g]
//	    a ConsumerGroupHeartbeat from member id A. The member acts as a
//	    client does: it sends the epoch it was last given (0 at first,
//	    and again after FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID, or after
//	    leaving), and owns the assignment it was last given. A join (epoch
//	    0) sends the rebalance timeout, its topics (t unless regex= or
//	    topics= says otherwise) and an empty owned list; a later heartbeat
//	    only what is given. epoch= and owned= (- : not sent) override;
//	    leave sends epoch -1, leave=static -2.
//	cdescribe G…               ConsumerGroupDescribe
//	events                     the group events reported since the last
//	                            events command, one a line:
//	                            @TIME KIND PROTOCOL GROUP gen=N members=N
//	                            [member=A(INSTANCE)] [reason="…"]; a
//	                            rebalance's with cause=C [by=A(INSTANCE)],
//	                            a completion's also with took=D, its
//	                            phases (classic: join= sync=; consumer:
//	                            assignment= revocation= reconciliation=)
//	                            and moved=N (partitions moved)

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scnClient is what a consumer-protocol member remembers.
type scnClient struct {
	epoch int32
	owned map[string][]int32 // topic → partitions
}

func (r *scnRunner) topics(a scnArgs) {
	if len(a.opts) == 0 {
		r.fail("topics NAME=PARTITIONS…")
	}
	metas := map[string]machine.TopicMeta{}
	for name, n := range a.opts {
		a.used[name] = true
		p, err := strconv.Atoi(n)
		if err != nil {
			r.fail("topics: bad partition count %q", n)
		}
		id, ok := r.topicIDs[name]
		if !ok {
			id = [16]byte{byte(len(r.topicIDs) + 1)}
			r.topicIDs[name] = id
		}
		metas[name] = machine.TopicMeta{ID: id, Partitions: int32(p)}
	}
	r.catVersion++
	r.h.catalog = machine.NewCatalog(r.catVersion, metas)
}

// topicName names a topic id by the catalog, or by the catalogs before
// it; an id made up by idOf for a topic no catalog had prints as ?NAME.
func (r *scnRunner) topicName(id [16]byte) string {
	if c := r.h.catalog; c != nil {
		if name, ok := c.ByID[id]; ok {
			return name
		}
	}
	for name, known := range r.topicIDs { // a topic the catalog no longer has
		if known == id {
			return name
		}
	}
	if id[0] == 0xee {
		return "?" + strings.TrimRight(string(id[1:]), "\x00")
	}
	return fmt.Sprintf("%x", id)
}

// idOf is the id of a topic the catalog has or had (topics), or else a
// made-up id (0xee, then the name) no catalog holds, for v10 requests
// naming a topic the broker does not have.
func (r *scnRunner) idOf(name string) [16]byte {
	if id, ok := r.topicIDs[name]; ok {
		return id
	}
	id := [16]byte{0xee}
	copy(id[1:], name)
	return id
}

// scnTPs prints topic → partitions as t/0,1,2 u/0, topics in order.
func scnTPs(m map[string][]int32) string {
	var out []string
	for _, t := range slices.Sorted(maps.Keys(m)) {
		ps := slices.Clone(m[t])
		if len(ps) == 0 {
			continue
		}
		slices.Sort(ps)
		var s []string
		for _, p := range ps {
			s = append(s, strconv.Itoa(int(p)))
		}
		out = append(out, t+"/"+strings.Join(s, ","))
	}
	if len(out) == 0 {
		return "(none)"
	}
	return strings.Join(out, " ")
}

func (r *scnRunner) recordTPs(ts []record.TopicPartitions) string {
	m := map[string][]int32{}
	for _, t := range ts {
		n := r.topicName(t.TopicID)
		m[n] = append(m[n], t.Partitions...)
	}
	return scnTPs(m)
}

func (r *scnRunner) cg(a scnArgs) {
	plainLeave := a.flag("leave")
	alias := r.one(a, "cg")
	st := r.clients[alias]
	if st == nil {
		st = &scnClient{}
		r.clients[alias] = st
	}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = int16(r.int(a, "v", 1))
	req.Group = a.str("group", "g")
	req.MemberID = alias
	req.InstanceID = a.strp("instance")
	req.MemberEpoch = st.epoch
	switch leave := a.str("leave", ""); {
	case leave == "static":
		req.MemberEpoch = leaveStatic
	case leave != "":
		r.fail("cg: leave or leave=static")
	case plainLeave:
		req.MemberEpoch = -1
	}
	req.MemberEpoch = int32(r.int(a, "epoch", int64(req.MemberEpoch)))
	regex := a.strp("regex")
	req.SubscribedTopicRegex = regex
	if ts := a.list("topics", nil); ts != nil {
		req.SubscribedTopicNames = ts
	}
	if as := a.strp("assignor"); as != nil {
		req.ServerAssignor = as
	}
	if _, ok := a.opts["rebalance"]; ok {
		req.RebalanceTimeoutMillis = r.ms(a, "rebalance", 0)
	}
	owned := st.owned
	if req.MemberEpoch == 0 {
		owned = map[string][]int32{}
		if req.RebalanceTimeoutMillis == -1 {
			req.RebalanceTimeoutMillis = 30000
		}
		if req.SubscribedTopicNames == nil && regex == nil {
			req.SubscribedTopicNames = []string{"t"}
		}
	}
	if o, ok := a.opts["owned"]; ok {
		a.used["owned"] = true
		owned = map[string][]int32{}
		if o == "-" {
			owned = nil
		}
		for _, e := range strings.Split(o, ",") {
			if e == "" || e == "-" {
				continue
			}
			topic, p, _, _ := r.tp(e)
			owned[topic] = append(owned[topic], p)
		}
	}
	if req.MemberEpoch >= 0 && owned != nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, t := range slices.Sorted(maps.Keys(owned)) {
			id, ok := r.topicIDs[t]
			if !ok {
				r.fail("cg: owned topic %q is no topic", t)
			}
			req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: owned[t]})
		}
	}
	id := r.send(req, alias, "cg "+alias)
	resp, ok := r.h.reply(id)
	if !ok {
		return
	}
	p := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
	switch {
	case p.ErrorCode == kerr.FencedMemberEpoch.Code || p.ErrorCode == kerr.UnknownMemberID.Code:
		*st = scnClient{} // drops everything and rejoins
	case p.ErrorCode != 0:
	case p.MemberEpoch < 0:
		*st = scnClient{} // left: a new subscribe starts at epoch 0
	default:
		st.epoch = p.MemberEpoch
		if p.Assignment != nil {
			st.owned = map[string][]int32{}
			for _, t := range p.Assignment.Topics {
				n := r.topicName(t.TopicID)
				st.owned[n] = append(st.owned[n], t.Partitions...)
			}
		}
	}
}

// leaveStatic is the epoch of a static member leaving for a while.
const leaveStatic = -2

func (r *scnRunner) cdescribe(a scnArgs) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = append([]string{}, a.pos...)
	r.send(req, "admin", a.str("as", "cdescribe"))
}

func (r *scnRunner) printConsumerResp(label string, resp kmsg.Response) bool {
	switch p := resp.(type) {
	case *kmsg.ConsumerGroupHeartbeatResponse:
		s := label + ": " + scnCode(p.ErrorCode)
		if p.ErrorCode == 0 {
			s += fmt.Sprintf(" epoch=%d", p.MemberEpoch)
			if p.Assignment != nil {
				m := map[string][]int32{}
				for _, t := range p.Assignment.Topics {
					n := r.topicName(t.TopicID)
					m[n] = append(m[n], t.Partitions...)
				}
				s += " assign=" + scnTPs(m)
			}
		}
		r.out("%s", s)
	case *kmsg.ConsumerGroupDescribeResponse:
		for _, g := range p.Groups {
			s := fmt.Sprintf("%s %s: %s", label, g.Group, scnCode(g.ErrorCode))
			if g.ErrorCode != 0 {
				r.out("%s", s)
				continue
			}
			r.out("%s state=%s epoch=%d assignment-epoch=%d assignor=%s", s, g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName)
			for _, m := range g.Members {
				n := r.name(m.MemberID)
				if m.InstanceID != nil {
					n += "(" + *m.InstanceID + ")"
				}
				tps := func(a []kmsg.AssignmentTopicPartition) string {
					out := map[string][]int32{}
					for _, t := range a {
						out[t.Topic] = append(out[t.Topic], t.Partitions...)
					}
					return scnTPs(out)
				}
				r.out("  %s epoch=%d assign=%s target=%s", n, m.MemberEpoch, tps(m.Assignment.TopicPartitions), tps(m.TargetAssignment.TopicPartitions))
			}
		}
	default:
		return false
	}
	return true
}

// printConsumerRecord prints a KIP-848 record; false if rec is none.
func (r *scnRunner) printConsumerRecord(kind record.Kind, key any, value []byte) bool {
	decode := func(err error) {
		if err != nil {
			r.fail("bad %v record: %v", kind, err)
		}
	}
	switch kind {
	case record.KindConsumerGroup, record.KindConsumerTargetEpoch:
		k := key.(record.GroupKey)
		what := map[record.Kind]string{record.KindConsumerGroup: "cgroup", record.KindConsumerTargetEpoch: "ctarget-epoch"}[kind]
		if value == nil {
			r.out("write %s %s deleted", what, k.Group)
			return true
		}
		var epoch int32
		if kind == record.KindConsumerGroup {
			v, err := record.DecodeConsumerGroup(value)
			decode(err)
			epoch = v.Epoch
		} else {
			v, err := record.DecodeConsumerTargetEpoch(value)
			decode(err)
			epoch = v.Epoch
		}
		r.out("write %s %s epoch=%d", what, k.Group, epoch)
	case record.KindConsumerMember, record.KindConsumerTarget, record.KindConsumerCurrent:
		k := key.(record.MemberKey)
		what := map[record.Kind]string{record.KindConsumerMember: "cmember", record.KindConsumerTarget: "ctarget", record.KindConsumerCurrent: "ccurrent"}[kind]
		head := fmt.Sprintf("write %s %s %s", what, k.Group, r.name(k.Member))
		if value == nil {
			r.out("%s deleted", head)
			return true
		}
		switch kind {
		case record.KindConsumerMember:
			v, err := record.DecodeConsumerMember(value)
			decode(err)
			s := head + " topics=" + strings.Join(v.Topics, ",")
			if v.Regex != "" {
				s += " regex=" + v.Regex
			}
			if v.InstanceID != nil {
				s += " inst=" + *v.InstanceID
			}
			if v.Assignor != "" {
				s += " assignor=" + v.Assignor
			}
			r.out("%s", s)
		case record.KindConsumerTarget:
			v, err := record.DecodeConsumerTarget(value)
			decode(err)
			r.out("%s %s", head, r.recordTPs(v.Topics))
		case record.KindConsumerCurrent:
			v, err := record.DecodeConsumerCurrent(value)
			decode(err)
			state := map[int8]string{0: "stable", 1: "unrevoked", 2: "unreleased"}[v.State]
			s := fmt.Sprintf("%s epoch=%d prev=%d state=%s assigned=%s", head, v.MemberEpoch, v.PreviousMemberEpoch, cmp.Or(state, "?"), r.recordTPs(v.Assigned))
			if len(v.Revoking) > 0 {
				s += " revoking=" + r.recordTPs(v.Revoking)
			}
			r.out("%s", s)
		}
	default:
		return false
	}
	return true
}

// events prints the group events reported since the last events command.
func (r *scnRunner) events() {
	evs := r.h.events[r.evSeen:]
	for _, e := range evs {
		r.name(e.Member) // binds a new member's alias
	}
	// Member ids in reasons print by alias, longest first.
	ids := slices.SortedFunc(maps.Keys(r.ids), func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, e := range evs {
		s := fmt.Sprintf("@%s %v %s %s", scnSince(e.At), e.Kind, e.Protocol, e.Group)
		if e.Tenant != "" {
			s += " tenant=" + e.Tenant
		}
		s += fmt.Sprintf(" gen=%d members=%d", e.Generation, e.Members)
		rebalance := e.Kind == observe.RebalanceStarted || e.Kind == observe.RebalanceCompleted
		if rebalance {
			s += " cause=" + e.Cause.String()
		}
		if e.Member != "" {
			if rebalance {
				s += " by=" + r.name(e.Member)
			} else {
				s += " member=" + r.name(e.Member)
			}
			if e.InstanceID != "" {
				s += "(" + e.InstanceID + ")"
			}
		}
		if e.Kind == observe.RebalanceCompleted {
			s += " took=" + e.Duration.String()
			if e.Protocol == "classic" {
				s += fmt.Sprintf(" join=%v sync=%v", e.Phases.Join, e.Phases.Sync)
			} else {
				s += fmt.Sprintf(" assignment=%v revocation=%v reconciliation=%v", e.Phases.Assignment, e.Phases.Revocation, e.Phases.Sync)
			}
			s += fmt.Sprintf(" moved=%d", e.PartitionsMoved)
		}
		if e.Reason != "" {
			reason := e.Reason
			for _, id := range ids {
				reason = strings.ReplaceAll(reason, id, r.ids[id])
			}
			s += " reason=" + strconv.Quote(reason)
		}
		r.out("%s", s)
	}
	r.evSeen = len(r.h.events)
}
