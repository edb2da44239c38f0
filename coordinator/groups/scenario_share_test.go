package groups_test

// Scenario commands for KIP-932 share groups (the file format is in
// scenario_test.go; topics and events are scenario_consumer_test.go's):
//
//	sg A [epoch=N] [topics=t[,u…]] [rack=R] [leave] [id=X] [group=g]
//	    a ShareGroupHeartbeat (v1) from member id A (the client mints it:
//	    the alias is the id; id= sends another, id= alone ""). The member
//	    acts as kgo's share consumer: it sends the epoch it was last given
//	    (0 at first, and again after FENCED_MEMBER_EPOCH or
//	    UNKNOWN_MEMBER_ID), its topics when joining (t unless topics=
//	    says otherwise) and otherwise only when topics= is given; leave
//	    sends epoch -1. epoch= overrides. Errors print their message.
//	sdescribe G… [ops]          ShareGroupDescribe (v1)
//	share-member G A            the host's ShareMemberCmd
//	share-deletions             the host's ShareDeletionsCmd
//	share-deleted G T…          the host's ShareStateDeletedCmd for topics T
//	share-offsets G             the wire's ShareOffsetsCmd (DescribeShareGroupOffsets)
//	share-alter G t/0,1 u/2…    the wire's ShareAlterCmd (AlterShareGroupOffsets)
//	share-delete G T…           the wire's ShareDeleteCmd (DeleteShareGroupOffsets);
//	                            T's partition count is the catalog's
//
// Scenario options: smaxsize=N (group.share.max.size), ssession=D and
// sinterval=D (the shard's share session timeout and heartbeat
// interval); gsession=D and ginterval=D set the group configs' (the
// share.* values a request carries).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/groups/share"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scnShareClient is what a share group member remembers.
type scnShareClient struct {
	epoch int32
}

func (r *scnRunner) sg(a scnArgs) {
	leave := a.flag("leave")
	alias := r.one(a, "sg")
	st := r.shareClients[alias]
	if st == nil {
		st = &scnShareClient{}
		r.shareClients[alias] = st
	}
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID = a.str("group", "g")
	req.MemberID = alias
	if v, ok := a.opts["id"]; ok {
		a.used["id"] = true
		req.MemberID = v
	}
	req.MemberEpoch = st.epoch
	if leave {
		req.MemberEpoch = -1
	}
	req.MemberEpoch = int32(r.int(a, "epoch", int64(req.MemberEpoch)))
	req.RackID = a.strp("rack")
	if _, ok := a.opts["topics"]; ok {
		req.SubscribedTopicNames = append([]string{}, a.list("topics", nil)...)
	} else if req.MemberEpoch == 0 {
		req.SubscribedTopicNames = []string{"t"}
	}
	r.h.nextID++
	id := r.h.nextID
	label := "sg " + alias
	r.labels[id] = label
	r.pending[id] = true
	out := r.h.m.Handle(r.h.now, machine.Request{ID: id, Msg: r.wire(req), ClientID: alias, ClientHost: "/127.0.0.1", Topics: r.h.catalog, GroupConfig: r.h.groupConfig})
	r.print(out)
	r.h.apply(out)
	resp, ok := r.h.reply(id)
	if !ok {
		return
	}
	p := resp.(*kmsg.ShareGroupHeartbeatResponse)
	switch {
	case p.ErrorCode == kerr.FencedMemberEpoch.Code || p.ErrorCode == kerr.UnknownMemberID.Code:
		st.epoch = 0 // rejoins
	case p.ErrorCode != 0:
	case p.MemberEpoch < 0:
		st.epoch = 0
	default:
		st.epoch = p.MemberEpoch
	}
}

func (r *scnRunner) sdescribe(a scnArgs) {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.Version = 1
	req.IncludeAuthorizedOperations = a.flag("ops")
	req.GroupIDs = append([]string{}, a.pos...)
	r.send(req, "admin", a.str("as", "sdescribe"))
}

// shareCmd sends a host's command to the shard and prints its answer.
func (r *scnRunner) shareCmd(label string, cmd any) {
	h := r.h
	h.nextID++
	id := h.nextID
	r.labels[id] = label
	out := h.m.Handle(h.now, machine.Request{ID: id, Cmd: cmd, Topics: h.catalog})
	for _, rec := range out.Records {
		r.printRecord(rec)
	}
	for _, rep := range out.Replies {
		switch v := rep.Out.(type) {
		case groups.ShareMember:
			s := fmt.Sprintf("%s: %s", label, scnCode(v.Code))
			if v.Code == 0 {
				s += fmt.Sprintf(" epoch=%d assigned=%s", v.Epoch, r.recordTPs(v.Assigned))
			}
			r.out("%s", s)
		case []groups.ShareDeletion:
			if len(v) == 0 {
				r.out("%s: (none)", label)
			}
			for _, d := range v {
				r.out("%s: %s/%s %s", label, d.Tenant, d.Group, r.shareTopics(d.Topics))
			}
		case groups.ShareOffsets:
			r.out("%s: %s", label, r.shareTopics(v.Initialized))
		case groups.ShareAltered:
			s := fmt.Sprintf("%s: %s", label, scnCode(v.Code))
			if v.Code != 0 {
				s += fmt.Sprintf(" %q", v.Message)
			} else if len(v.Drop) > 0 {
				s += " drop=" + r.shareTopics(v.Drop)
			}
			r.out("%s", s)
		case groups.ShareDeleted:
			s := fmt.Sprintf("%s: %s", label, scnCode(v.Code))
			if v.Code != 0 {
				s += fmt.Sprintf(" %q", v.Message)
			}
			for i, code := range v.Codes {
				s += fmt.Sprintf(" %s=%s", r.pendingDelete[i], scnCode(code))
				if code == 0 {
					s += "(" + r.shareTopics(v.Drop[i:i+1]) + ")"
				}
			}
			r.out("%s", s)
		case groups.ShareStateDeleted:
			r.out("%s: done", label)
		default:
			r.fail("%s answered %T", label, rep.Out)
		}
	}
	h.apply(out)
}

func (r *scnRunner) shareMember(a scnArgs) {
	if len(a.pos) != 2 {
		r.fail("share-member G A")
	}
	r.shareCmd("share-member "+a.pos[1], groups.ShareMemberCmd{Group: a.pos[0], Member: a.pos[1]})
}

func (r *scnRunner) shareDeleted(a scnArgs) {
	if len(a.pos) < 2 {
		r.fail("share-deleted G T…")
	}
	var ids [][16]byte
	for _, t := range a.pos[1:] {
		ids = append(ids, r.idOf(t))
	}
	r.shareCmd("share-deleted", groups.ShareStateDeletedCmd{Group: a.pos[0], Topics: ids})
}

func (r *scnRunner) shareOffsets(a scnArgs) {
	if len(a.pos) != 1 {
		r.fail("share-offsets G")
	}
	r.shareCmd("share-offsets", groups.ShareOffsetsCmd{Group: a.pos[0]})
}

// shareAlter sends ShareAlterCmd for partitions written t/0,1 u/2.
func (r *scnRunner) shareAlter(a scnArgs) {
	if len(a.pos) < 1 {
		r.fail("share-alter G t/0,1…")
	}
	var ts []record.ShareStateTopic
	for _, tp := range a.pos[1:] {
		name, parts, ok := strings.Cut(tp, "/")
		if !ok {
			r.fail("share-alter: %q is not t/0,1", tp)
		}
		t := record.ShareStateTopic{TopicID: r.idOf(name), Name: name}
		for _, p := range strings.Split(parts, ",") {
			n, err := strconv.Atoi(p)
			if err != nil {
				r.fail("share-alter: partition %q", p)
			}
			t.Partitions = append(t.Partitions, int32(n))
		}
		ts = append(ts, t)
	}
	r.shareCmd("share-alter", groups.ShareAlterCmd{Group: a.pos[0], Topics: ts})
}

// shareDelete sends ShareDeleteCmd for the topics named, each with the
// catalog's partition count (0 for a topic it does not have).
func (r *scnRunner) shareDelete(a scnArgs) {
	if len(a.pos) < 1 {
		r.fail("share-delete G T…")
	}
	var ts []share.OffsetsTopic
	for _, name := range a.pos[1:] {
		t := share.OffsetsTopic{TopicID: r.idOf(name), Name: name}
		if c := r.h.catalog; c != nil {
			t.Partitions = c.ByName[name].Partitions
		}
		ts = append(ts, t)
	}
	r.pendingDelete = a.pos[1:]
	r.shareCmd("share-delete", groups.ShareDeleteCmd{Group: a.pos[0], Topics: ts})
}

// shareTopics prints a ShareGroupPartitions list as t/0,1 u/2.
func (r *scnRunner) shareTopics(ts []record.ShareStateTopic) string {
	m := map[string][]int32{}
	for _, t := range ts {
		n := t.Name
		if n == "" {
			n = r.topicName(t.TopicID)
		}
		m[n] = append(m[n], t.Partitions...)
	}
	return scnTPs(m)
}

func (r *scnRunner) printShareResp(label string, resp kmsg.Response) bool {
	msg := func(code int16, m *string) string {
		s := scnCode(code)
		if code != 0 && m != nil {
			s += fmt.Sprintf(" %q", *m)
		}
		return s
	}
	switch p := resp.(type) {
	case *kmsg.ShareGroupHeartbeatResponse:
		s := label + ": " + msg(p.ErrorCode, p.ErrorMessage)
		if p.ErrorCode == 0 {
			s += fmt.Sprintf(" epoch=%d interval=%dms", p.MemberEpoch, p.HeartbeatIntervalMillis)
			if p.Assignment != nil {
				m := map[string][]int32{}
				for _, t := range p.Assignment.TopicPartitions {
					n := r.topicName(t.TopicID)
					m[n] = append(m[n], t.Partitions...)
				}
				s += " assign=" + scnTPs(m)
			}
		}
		r.out("%s", s)
	case *kmsg.ShareGroupDescribeResponse:
		for _, g := range p.Groups {
			s := fmt.Sprintf("%s %s: %s", label, g.GroupID, msg(g.ErrorCode, g.ErrorMessage))
			if g.ErrorCode != 0 {
				r.out("%s", s)
				continue
			}
			s += fmt.Sprintf(" state=%s epoch=%d assignment-epoch=%d assignor=%s", g.GroupState, g.GroupEpoch, g.AssignmentEpoch, g.Assignor)
			if g.AuthorizedOperations != -2147483648 {
				s += fmt.Sprintf(" ops=%#x", g.AuthorizedOperations)
			}
			r.out("%s", s)
			for _, m := range g.Members {
				out := map[string][]int32{}
				for _, t := range m.Assignment.TopicPartitions {
					out[t.Topic] = append(out[t.Topic], t.Partitions...)
				}
				line := fmt.Sprintf("  %s epoch=%d client=%s/%s topics=%s assign=%s", m.MemberID, m.MemberEpoch, m.ClientID, m.ClientHost, strings.Join(m.SubscribedTopicNames, ","), scnTPs(out))
				if m.RackID != nil {
					line += " rack=" + *m.RackID
				}
				r.out("%s", line)
			}
		}
	default:
		return false
	}
	return true
}

// printShareRecord prints a share group record; false if rec is none.
func (r *scnRunner) printShareRecord(kind record.Kind, key any, value []byte) bool {
	decode := func(err error) {
		if err != nil {
			r.fail("bad %v record: %v", kind, err)
		}
	}
	switch kind {
	case record.KindShareGroup, record.KindShareTargetEpoch, record.KindShareGroupPartitions:
		k := key.(record.GroupKey)
		what := map[record.Kind]string{record.KindShareGroup: "sgroup", record.KindShareTargetEpoch: "starget-epoch", record.KindShareGroupPartitions: "spartitions"}[kind]
		if value == nil {
			r.out("write %s %s deleted", what, k.Group)
			return true
		}
		switch kind {
		case record.KindShareGroup:
			v, err := record.DecodeShareGroup(value)
			decode(err)
			r.out("write %s %s epoch=%d", what, k.Group, v.Epoch)
		case record.KindShareTargetEpoch:
			v, err := record.DecodeShareTargetEpoch(value)
			decode(err)
			r.out("write %s %s epoch=%d", what, k.Group, v.Epoch)
		default:
			v, err := record.DecodeShareGroupPartitions(value)
			decode(err)
			r.out("write %s %s initialized=%s deleting=%s", what, k.Group, r.shareTopics(v.Initialized), r.shareTopics(v.Deleting))
		}
	case record.KindShareMember, record.KindShareTarget, record.KindShareCurrent:
		k := key.(record.MemberKey)
		what := map[record.Kind]string{record.KindShareMember: "smember", record.KindShareTarget: "starget", record.KindShareCurrent: "scurrent"}[kind]
		head := fmt.Sprintf("write %s %s %s", what, k.Group, k.Member)
		if value == nil {
			r.out("%s deleted", head)
			return true
		}
		switch kind {
		case record.KindShareMember:
			v, err := record.DecodeShareMember(value)
			decode(err)
			s := head + " topics=" + strings.Join(v.Topics, ",")
			if v.RackID != nil {
				s += " rack=" + *v.RackID
			}
			r.out("%s", s)
		case record.KindShareTarget:
			v, err := record.DecodeShareTarget(value)
			decode(err)
			r.out("%s %s", head, r.recordTPs(v.Topics))
		default:
			v, err := record.DecodeShareCurrent(value)
			decode(err)
			r.out("%s epoch=%d prev=%d assigned=%s", head, v.MemberEpoch, v.PreviousMemberEpoch, r.recordTPs(v.Assigned))
		}
	default:
		return false
	}
	return true
}
