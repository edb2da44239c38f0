package main

// Share groups (KIP-932) in `cohort groups`, as kafka-share-groups.sh
// (Kafka 4.2's tools/.../consumer/group/ShareGroupCommand.java) shows and
// changes them, over the same Kafka APIs through kadm:
//
//	describe         ShareGroupDescribe (77) and DescribeShareGroupOffsets
//	                 (90): per partition the share-partition start offset
//	                 and the lag (v1, KIP-1226), in its columns GROUP,
//	                 TOPIC, PARTITION, START-OFFSET, LAG (--verbose adds
//	                 LEADER-EPOCH); --members and --state as its own
//	lag              the same offsets
//	seek             AlterShareGroupOffsets (91): the group must be empty,
//	                 as --reset-offsets requires
//	delete-offsets   DeleteShareGroupOffsets (92), by whole topics: the API
//	                 names no partitions
//
// A share group commits no offsets: where a consumer group's committed
// offset is, a share group's start offset is, and the records in flight
// after it (available, acquired, acknowledged, archived), which no Kafka
// response carries: --admin-url adds them from a Cohort node's admin API.

import (
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// shareCounts are a share group partition's records in flight by state,
// as a Cohort node's admin API gives them (admin.ShareCounts).
type shareCounts struct {
	InFlight     int64 `json:"in_flight"`
	Available    int64 `json:"available"`
	Acquired     int64 `json:"acquired"`
	Acknowledged int64 `json:"acknowledged"`
	Archived     int64 `json:"archived"`
	Redelivered  int64 `json:"redelivered"`
}

func fromShare(d kadm.DescribedShareGroup) (describedGroup, kadm.TopicsSet) {
	epoch, aepoch := d.GroupEpoch, d.AssignmentEpoch
	g := describedGroup{
		Group:           d.GroupID,
		Coordinator:     broker{d.Coordinator.NodeID, d.Coordinator.Host, d.Coordinator.Port},
		State:           d.GroupState,
		Type:            "share",
		ProtocolType:    "share",
		Balancer:        d.Assignor,
		Epoch:           &epoch,
		AssignmentEpoch: &aepoch,
		Members:         []groupMember{},
	}
	for _, m := range d.Members {
		e := m.MemberEpoch
		g.Members = append(g.Members, groupMember{
			MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost,
			MemberEpoch: &e, Assignment: sortedAssignment(m.Assignment),
		})
	}
	sort.Slice(g.Members, func(i, j int) bool { return g.Members[i].MemberID < g.Members[j].MemberID })
	return g, d.AssignedPartitions()
}

// shareRows is a row for every partition share group g is assigned or
// has a start offset of (offs; its error, if the offsets could not be
// read, goes to g.Error), sorted, with every member assigned it.
func shareRows(g *describedGroup, assigned kadm.TopicsSet, offs kadm.DescribedShareGroupOffsets, offsErr error) {
	members := map[string]map[int32][]string{}
	for _, m := range g.Members {
		for _, tp := range m.Assignment {
			if members[tp.Topic] == nil {
				members[tp.Topic] = map[int32][]string{}
			}
			for _, p := range tp.Partitions {
				members[tp.Topic][p] = append(members[tp.Topic][p], m.MemberID)
			}
		}
	}
	switch {
	case offsErr != nil:
		g.Error = fmt.Sprintf("describe share group offsets: %v", offsErr)
	case offs.Err != nil:
		g.Error = fmt.Sprintf("describe share group offsets: %v", offs.Err)
	}
	all := kadm.TopicsSet{}
	all.Merge(assigned)
	offs.Offsets.Each(func(o kadm.ShareOffset) { all.Add(o.Topic, o.Partition) })
	g.Partitions = []partitionLag{}
	all.Each(func(t string, p int32) {
		start := int64(-1)
		r := partitionLag{Topic: t, Partition: p, CurrentOffset: -1, StartOffset: &start, Lag: -1, MemberIDs: members[t][p]}
		slices.Sort(r.MemberIDs)
		if o, ok := offs.Offsets.Lookup(t, p); ok {
			if o.Err != nil {
				r.Error = o.Err.Error()
			} else {
				start, r.Lag = o.StartOffset, o.Lag
				epoch := o.LeaderEpoch
				r.LeaderEpoch = &epoch
			}
		}
		g.Partitions = append(g.Partitions, r)
	})
	sortPartitions(g.Partitions)
}

func sortPartitions(ps []partitionLag) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Topic != ps[j].Topic {
			return ps[i].Topic < ps[j].Topic
		}
		return ps[i].Partition < ps[j].Partition
	})
}

// fillLogOffsets sets a share partition's log start and end offsets; its
// lag is the coordinator's (DescribeShareGroupOffsets v1), not counted
// here.
func fillLogOffsets(p *partitionLag, starts, ends kadm.ListedOffsets) {
	p.LogStartOffset, p.LogEndOffset = -1, -1
	if s, ok := starts.Lookup(p.Topic, p.Partition); ok && s.Err == nil {
		p.LogStartOffset = s.Offset
	}
	if e, ok := ends.Lookup(p.Topic, p.Partition); ok && e.Err == nil {
		p.LogEndOffset = e.Offset
	}
}

// shareGroup describes group if it is a share group: ok false for a group
// of another type, an unknown one, or a broker without share groups.
func shareGroup(e *groupsEnv, group string) (kadm.DescribedShareGroup, bool) {
	ctx, cancel := e.ctx()
	defer cancel()
	ds, err := e.client().DescribeShareGroups(ctx, group)
	if err != nil {
		return kadm.DescribedShareGroup{}, false
	}
	d, ok := ds[group]
	return d, ok && d.Err == nil && d.GroupState != "Dead"
}

// printShareDescribed is a share group's part of describe's text: its
// members (kafka-share-groups.sh --members' columns, GROUP left out, as
// the summary above names it) and its offsets.
func printShareDescribed(w io.Writer, g describedGroup, verbose, cohort bool) {
	if len(g.Members) > 0 {
		fmt.Fprintln(w)
		printShareMembers(w, g, verbose, false)
	}
	fmt.Fprintln(w)
	printShareOffsets(w, []describedGroup{g}, verbose, cohort)
}

// printShareOffsets is kafka-share-groups.sh --describe's table: GROUP,
// TOPIC, PARTITION, START-OFFSET and LAG, "-" where unknown; --verbose
// adds LEADER-EPOCH before START-OFFSET. With a Cohort node's admin API
// (cohort) the records in flight, acquired and archived, and the lag
// status follow.
func printShareOffsets(w io.Writer, gs []describedGroup, verbose, cohort bool) {
	headers := []string{"GROUP", "TOPIC", "PARTITION"}
	if verbose {
		headers = append(headers, "LEADER-EPOCH")
	}
	headers = append(headers, "START-OFFSET", "LAG")
	if cohort {
		headers = append(headers, "IN-FLIGHT", "ACQUIRED", "ARCHIVED", "STATUS")
	}
	rows := 0
	for _, g := range gs {
		rows += len(g.Partitions)
	}
	var t *table
	if rows > 0 {
		t = newTable(w, headers...)
	}
	var notes []string
	for _, g := range gs {
		if len(g.Partitions) == 0 {
			notes = append(notes, fmt.Sprintf("Share group '%s' has no offset information.", g.Group))
		}
		for _, p := range g.Partitions {
			cells := []any{g.Group, p.Topic, p.Partition}
			if verbose {
				epoch := "-"
				if p.LeaderEpoch != nil && *p.LeaderEpoch >= 0 {
					epoch = strconv.Itoa(int(*p.LeaderEpoch))
				}
				cells = append(cells, epoch)
			}
			cells = append(cells, offsetCell(*p.StartOffset), offsetCell(p.Lag))
			if cohort {
				if c := p.Share; c != nil {
					cells = append(cells, c.InFlight, c.Acquired, c.Archived)
				} else {
					cells = append(cells, "-", "-", "-")
				}
				cells = append(cells, dash(p.Status))
			}
			t.row(cells...)
		}
		if g.Error != "" {
			notes = append(notes, g.Group+": "+g.Error)
		}
		for _, p := range g.Partitions {
			if p.Error != "" {
				notes = append(notes, fmt.Sprintf("%s %s/%d: %s", g.Group, p.Topic, p.Partition, p.Error))
			}
		}
	}
	if t != nil {
		t.flush()
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

// printShareMembers is kafka-share-groups.sh --members' table: GROUP,
// CONSUMER-ID, HOST, CLIENT-ID, #PARTITIONS and ASSIGNMENT (topic:p,p;…);
// --verbose adds MEMBER-EPOCH before ASSIGNMENT. withGroup false leaves
// GROUP out (describe's summary names it).
func printShareMembers(w io.Writer, g describedGroup, verbose, withGroup bool) {
	if len(g.Members) == 0 {
		fmt.Fprintf(w, "Share group '%s' has no active members.\n", g.Group)
		return
	}
	headers := []string{"CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"}
	if verbose {
		headers = append(headers, "MEMBER-EPOCH")
	}
	headers = append(headers, "ASSIGNMENT")
	if withGroup {
		headers = append([]string{"GROUP"}, headers...)
	}
	t := newTable(w, headers...)
	for _, m := range g.Members {
		n := 0
		for _, tp := range m.Assignment {
			n += len(tp.Partitions)
		}
		cells := []any{m.MemberID, m.Host, m.ClientID, n}
		if verbose {
			cells = append(cells, *m.MemberEpoch)
		}
		cells = append(cells, shareAssignment(m.Assignment))
		if withGroup {
			cells = append([]any{g.Group}, cells...)
		}
		t.row(cells...)
	}
	t.flush()
}

// shareAssignment is an assignment as kafka-share-groups.sh writes it:
// topic:p,p per topic, sorted, joined by ";"; "" for none.
func shareAssignment(a []topicPartitions) string {
	parts := make([]string, 0, len(a))
	for _, tp := range a {
		ps := make([]string, len(tp.Partitions))
		for i, p := range tp.Partitions {
			ps[i] = strconv.Itoa(int(p))
		}
		parts = append(parts, tp.Topic+":"+strings.Join(ps, ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// coordinatorCell is a coordinator as the Kafka tools' --state writes
// it: host:port  (id).
func coordinatorCell(b broker) string {
	return fmt.Sprintf("%s  (%d)", net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), b.ID)
}

// shareOffsetResult is one topic in delete-offsets' output for a share
// group: DeleteShareGroupOffsets answers per topic.
type shareOffsetResult struct {
	Topic string `json:"topic"`
	Error string `json:"error,omitempty"`
}

// deleteShareOffsets deletes share group group's start offsets (its
// share-partition state) of whole topics: the next fetch of each
// partition starts it again from share.auto.offset.reset. Kafka requires
// the group to be empty (NON_EMPTY_GROUP otherwise).
func deleteShareOffsets(e *groupsEnv, group string, topics *topicFlag) error {
	for _, t := range topics.order {
		if topics.parts[t] != nil {
			return usageError(fmt.Sprintf("group %q is a share group: its offsets are deleted by whole topics (DeleteShareGroupOffsets names no partitions), not %s:…", group, t))
		}
	}
	ctx, cancel := e.ctx()
	defer cancel()
	resp, err := e.client().DeleteShareGroupOffsets(ctx, group, topics.order...)
	if err != nil {
		return fmt.Errorf("group %q: %w", group, err)
	}
	out := []shareOffsetResult{}
	var failed []string
	for _, t := range topics.order {
		r := shareOffsetResult{Topic: t}
		if err, ok := resp.Lookup(t); ok && err != nil {
			r.Error = err.Error()
			failed = append(failed, fmt.Sprintf("%s: %v", t, err))
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	sort.Strings(failed)
	if err := e.output(out, func(w io.Writer) {
		t := newTable(w, "TOPIC", "STATUS")
		for _, r := range out {
			t.row(r.Topic, statusCell(r.Error, "deleted"))
		}
		t.flush()
	}); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("group %q: %s", group, strings.Join(failed, "; "))
	}
	return nil
}

// shareStartOffsets reads share group group's start offsets, as seek's
// current offsets: every partition with share-partition state.
func shareStartOffsets(e *groupsEnv, group string) (kadm.OffsetResponses, error) {
	ctx, cancel := e.ctx()
	defer cancel()
	ds, err := e.client().DescribeShareGroupOffsets(ctx, group)
	if err == nil {
		err = ds[group].Err
	}
	if err != nil {
		return nil, fmt.Errorf("group %q: describe share group offsets: %w", group, err)
	}
	out := kadm.OffsetResponses{}
	ds[group].Offsets.Each(func(o kadm.ShareOffset) {
		if o.Err == nil && o.StartOffset >= 0 {
			out.Add(kadm.OffsetResponse{Offset: kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.StartOffset}})
		}
	})
	return out, nil
}
