package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// describedGroup is `cohort groups describe`'s view of one group, classic,
// KIP-848 or KIP-932 share (groups_share.go), in the JSON output and
// behind the text.
//
// Cohort's stable group id (cgp_…), its RRL, lag status and time to clear
// come from a Cohort node's admin API when --admin-url names one: no Kafka
// response carries them (groups_cohort.go).
type describedGroup struct {
	Group string `json:"group"`
	CgpID string `json:"cgp_id,omitempty"`
	RRL   string `json:"rrl,omitempty"`
	// Status is the Burrow-like lag status (OK, WARN, STALL, STOP, ERR,
	// UNKNOWN) and TimeToClearSeconds the estimated time to consume the
	// lag (absent when it is not shrinking); both need --admin-url.
	Status             string   `json:"status,omitempty"`
	TimeToClearSeconds *float64 `json:"time_to_clear_seconds,omitempty"`
	Coordinator        broker   `json:"coordinator"`
	State              string   `json:"state"`
	Type               string   `json:"type"`          // classic, consumer (KIP-848) or share (KIP-932)
	ProtocolType       string   `json:"protocol_type"` // classic groups: "consumer", "connect", …
	// Balancer is a classic group's chosen protocol (the client-side
	// assignor), or a consumer or share group's server assignor.
	Balancer string `json:"balancer"`
	// Epoch and AssignmentEpoch are a consumer or share group's group
	// epoch and target assignment epoch (KIP-848); absent for classic
	// groups.
	Epoch           *int32         `json:"epoch,omitempty"`
	AssignmentEpoch *int32         `json:"assignment_epoch,omitempty"`
	Members         []groupMember  `json:"members"`
	TotalLag        int64          `json:"total_lag"`
	Partitions      []partitionLag `json:"partitions"`
	// Error says why a share group's offsets could not be read (a broker
	// without DescribeShareGroupOffsets); its partitions then show none.
	Error string `json:"error,omitempty"`
}

type groupMember struct {
	MemberID   string  `json:"member_id"`
	InstanceID *string `json:"instance_id,omitempty"`
	ClientID   string  `json:"client_id"`
	Host       string  `json:"host"`
	// MemberEpoch is a consumer or share group member's epoch; absent
	// for classic.
	MemberEpoch *int32            `json:"member_epoch,omitempty"`
	Assignment  []topicPartitions `json:"assignment"`
	// TargetAssignment is where a consumer group member is heading
	// (KIP-848); it differs from Assignment while the member reconciles.
	TargetAssignment []topicPartitions `json:"target_assignment,omitempty"`
}

type topicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// partitionLag is one partition a group has committed or is assigned.
type partitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// CurrentOffset is the committed offset, -1 if none.
	CurrentOffset  int64 `json:"current_offset"`
	LogStartOffset int64 `json:"log_start_offset"`
	LogEndOffset   int64 `json:"log_end_offset"`
	// Lag is LogEndOffset less CurrentOffset (at least 0); with no commit,
	// LogEndOffset less LogStartOffset, as rpk and kadm count it; -1 if
	// the offsets could not be listed (Error says why). A share group's
	// is the coordinator's (KIP-1226: the high watermark less the start
	// offset less the records acknowledged or archived after it), -1
	// when it gives none.
	Lag        int64   `json:"lag"`
	MemberID   string  `json:"member_id,omitempty"`
	InstanceID *string `json:"instance_id,omitempty"`
	ClientID   string  `json:"client_id,omitempty"`
	Host       string  `json:"host,omitempty"`
	// Share groups (KIP-932): StartOffset is the share-partition start
	// offset (-1: no state yet) and LeaderEpoch the partition's leader
	// epoch, from DescribeShareGroupOffsets; MemberIDs every member
	// assigned the partition (it may have several); Share its records in
	// flight, with --admin-url.
	StartOffset *int64       `json:"start_offset,omitempty"`
	LeaderEpoch *int32       `json:"leader_epoch,omitempty"`
	MemberIDs   []string     `json:"member_ids,omitempty"`
	Share       *shareCounts `json:"share,omitempty"`
	Status      string       `json:"status,omitempty"` // with --admin-url
	Error       string       `json:"error,omitempty"`
}

func describeFlags(fs *flag.FlagSet) func(*groupsEnv, []string) error {
	members := fs.Bool("members", false, "show only the members, as kafka-consumer-groups.sh and kafka-share-groups.sh --describe --members (GROUP, CONSUMER-ID, HOST, CLIENT-ID, #PARTITIONS; a share group's ASSIGNMENT)")
	state := fs.Bool("state", false, "show only each group's state, as kafka-consumer-groups.sh and kafka-share-groups.sh --describe --state (GROUP, COORDINATOR (ID), STATE, #MEMBERS)")
	verbose := fs.Bool("verbose", false, "more columns, as the Kafka tools' --verbose: a share group's LEADER-EPOCH and MEMBER-EPOCH, the epochs with --state, the ASSIGNMENT with --members")
	return func(e *groupsEnv, names []string) error {
		if *members && *state {
			return usageError("--members and --state are exclusive")
		}
		gs, err := describeGroups(e, names)
		if err == nil {
			err = addCohortInfo(e, gs)
		}
		if err != nil {
			return err
		}
		return e.output(gs, func(w io.Writer) {
			for i, g := range gs {
				if i > 0 {
					fmt.Fprintln(w)
				}
				switch {
				case *members:
					printMembers(w, g, *verbose)
				case *state:
					printState(w, g, *verbose)
				default:
					printDescribed(w, g, *verbose)
				}
			}
		})
	}
}

// printMembers is the Kafka tools' --describe --members: a share group's
// as kafka-share-groups.sh, another's as kafka-consumer-groups.sh (GROUP,
// CONSUMER-ID, GROUP-INSTANCE-ID when a member has one, HOST, CLIENT-ID,
// #PARTITIONS; --verbose adds ASSIGNMENT).
func printMembers(w io.Writer, g describedGroup, verbose bool) {
	if g.Type == "share" {
		printShareMembers(w, g, verbose, true)
		return
	}
	if len(g.Members) == 0 {
		fmt.Fprintf(w, "Consumer group '%s' has no active members.\n", g.Group)
		return
	}
	instances := false
	for _, m := range g.Members {
		instances = instances || m.InstanceID != nil && *m.InstanceID != ""
	}
	headers := []string{"GROUP", "CONSUMER-ID"}
	if instances {
		headers = append(headers, "GROUP-INSTANCE-ID")
	}
	headers = append(headers, "HOST", "CLIENT-ID", "#PARTITIONS")
	if verbose {
		headers = append(headers, "ASSIGNMENT")
	}
	t := newTable(w, headers...)
	for _, m := range g.Members {
		n := 0
		for _, tp := range m.Assignment {
			n += len(tp.Partitions)
		}
		cells := []any{g.Group, m.MemberID}
		if instances {
			inst := ""
			if m.InstanceID != nil {
				inst = *m.InstanceID
			}
			cells = append(cells, dash(inst))
		}
		cells = append(cells, m.Host, m.ClientID, n)
		if verbose {
			cells = append(cells, formatAssignment(m.Assignment))
		}
		t.row(cells...)
	}
	t.flush()
}

// printState is the Kafka tools' --describe --state: GROUP, COORDINATOR
// (ID), STATE, #MEMBERS; kafka-consumer-groups.sh adds
// ASSIGNMENT-STRATEGY, kafka-share-groups.sh --verbose GROUP-EPOCH and
// ASSIGNMENT-EPOCH.
func printState(w io.Writer, g describedGroup, verbose bool) {
	headers := []string{"GROUP", "COORDINATOR (ID)"}
	cells := []any{g.Group, coordinatorCell(g.Coordinator)}
	if g.Type != "share" {
		headers, cells = append(headers, "ASSIGNMENT-STRATEGY"), append(cells, dash(g.Balancer))
	}
	headers, cells = append(headers, "STATE"), append(cells, g.State)
	if verbose && g.Epoch != nil {
		headers, cells = append(headers, "GROUP-EPOCH", "ASSIGNMENT-EPOCH"), append(cells, *g.Epoch, *g.AssignmentEpoch)
	}
	headers, cells = append(headers, "#MEMBERS"), append(cells, len(g.Members))
	t := newTable(w, headers...)
	t.row(cells...)
	t.flush()
}

func printDescribed(w io.Writer, g describedGroup, verbose bool) {
	s := newTable(w, "GROUP", g.Group)
	s.row("COORDINATOR", g.Coordinator)
	s.row("STATE", g.State)
	s.row("TYPE", g.Type)
	s.row("BALANCER", g.Balancer)
	if g.Epoch != nil {
		s.row("EPOCH", fmt.Sprintf("%d (assignment %d)", *g.Epoch, *g.AssignmentEpoch))
	}
	s.row("MEMBERS", len(g.Members))
	s.row("TOTAL-LAG", g.TotalLag)
	if g.CgpID != "" {
		s.row("LAG-STATUS", g.Status)
		s.row("TIME-TO-CLEAR", timeToClearCell(g.TimeToClearSeconds))
		s.row("CGP-ID", g.CgpID)
		s.row("RRL", g.RRL)
	}
	s.flush()

	if g.Type == "share" {
		printShareDescribed(w, g, verbose, g.CgpID != "")
		return
	}
	if g.Type == "consumer" && len(g.Members) > 0 {
		// KIP-848: each member's epoch, and its current against its target
		// assignment, which differ while it reconciles.
		fmt.Fprintln(w)
		t := newTable(w, "MEMBER-ID", "MEMBER-EPOCH", "ASSIGNMENT", "TARGET-ASSIGNMENT")
		for _, m := range g.Members {
			t.row(m.MemberID, *m.MemberEpoch, formatAssignment(m.Assignment), formatAssignment(m.TargetAssignment))
		}
		t.flush()
	}

	fmt.Fprintln(w)
	instances := false
	for _, p := range g.Partitions {
		instances = instances || p.InstanceID != nil
	}
	headers := []string{"TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-START-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID"}
	if instances {
		headers = append(headers, "INSTANCE-ID")
	}
	headers = append(headers, "CLIENT-ID", "HOST")
	if g.CgpID != "" {
		headers = append(headers, "STATUS")
	}
	t := newTable(w, headers...)
	for _, p := range g.Partitions {
		cells := []any{p.Topic, p.Partition, offsetCell(p.CurrentOffset), offsetCell(p.LogStartOffset), offsetCell(p.LogEndOffset), offsetCell(p.Lag), dash(p.MemberID)}
		if instances {
			inst := ""
			if p.InstanceID != nil {
				inst = *p.InstanceID
			}
			cells = append(cells, dash(inst))
		}
		cells = append(cells, dash(p.ClientID), dash(p.Host))
		if g.CgpID != "" {
			cells = append(cells, dash(p.Status))
		}
		t.row(cells...)
	}
	t.flush()
	for _, p := range g.Partitions {
		if p.Error != "" {
			fmt.Fprintf(w, "%s/%d: %s\n", p.Topic, p.Partition, p.Error)
		}
	}
}

// offsetCell shows an unknown offset (-1) as "-", as kafka-consumer-groups.sh.
func offsetCell(o int64) any {
	if o < 0 {
		return "-"
	}
	return o
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func formatAssignment(a []topicPartitions) string {
	if len(a) == 0 {
		return "-"
	}
	parts := make([]string, len(a))
	for i, tp := range a {
		ps := make([]string, len(tp.Partitions))
		for j, p := range tp.Partitions {
			ps[j] = fmt.Sprint(p)
		}
		parts[i] = tp.Topic + ":" + strings.Join(ps, ",")
	}
	return strings.Join(parts, " ")
}

// describeGroups describes each named group, in the order named: as a
// classic group (DescribeGroups), else as a KIP-848 consumer group
// (ConsumerGroupDescribe), with its committed offsets, else as a KIP-932
// share group (ShareGroupDescribe) with its start offsets and lag
// (DescribeShareGroupOffsets); and the log start and end offsets of every
// partition it has committed, has a start offset of, or is assigned.
func describeGroups(e *groupsEnv, names []string) ([]describedGroup, error) {
	ctx, cancel := e.ctx()
	defer cancel()
	adm := e.client()
	classic, err := adm.DescribeGroups(ctx, names...)
	if err != nil {
		return nil, err
	}
	var rest []string
	for _, n := range names {
		if d, ok := classic[n]; !ok || d.Err != nil || d.State == "Dead" {
			rest = append(rest, n)
		}
	}
	var consumer kadm.DescribedConsumerGroups
	if len(rest) > 0 {
		// A broker without KIP-848 (before Kafka 4) refuses the request:
		// then these groups are simply unknown.
		consumer, _ = adm.DescribeConsumerGroups(ctx, rest...)
	}
	var others []string
	for _, n := range rest {
		if d, ok := consumer[n]; !ok || d.Err != nil {
			others = append(others, n)
		}
	}
	var share kadm.DescribedShareGroups
	if len(others) > 0 {
		// Likewise a broker without KIP-932 (before Kafka 4.1).
		share, _ = adm.DescribeShareGroups(ctx, others...)
	}
	var shareNames []string
	shareAssigned := map[string]kadm.TopicsSet{}
	out := make([]describedGroup, 0, len(names))
	wanted := kadm.TopicsSet{}
	commits := map[string]kadm.OffsetResponses{}
	for _, n := range names {
		var g describedGroup
		var assigned kadm.TopicsSet
		if d, ok := consumer[n]; ok && d.Err == nil {
			g, assigned = fromConsumer(d)
		} else if d, ok := classic[n]; ok && d.Err == nil && d.State != "Dead" {
			g, assigned = fromClassic(d)
		} else if d, ok := share[n]; ok && d.Err == nil && d.GroupState != "Dead" {
			// A share group commits nothing: its offsets are read below,
			// all of them in one request.
			g, assigned = fromShare(d)
			shareNames, shareAssigned[n] = append(shareNames, n), assigned
			out = append(out, g)
			continue
		} else {
			cerr := classic[n].Err
			if cerr != nil && !errors.Is(cerr, kerr.GroupIDNotFound) {
				return nil, fmt.Errorf("group %q: %w", n, cerr)
			}
			return nil, groupNotFound(n)
		}
		fetched, err := adm.FetchOffsets(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("group %q: fetch offsets: %w", n, err)
		}
		commits[n] = fetched
		wanted.Merge(assigned)
		fetched.Each(func(o kadm.OffsetResponse) { wanted.Add(o.Topic, o.Partition) })
		g.Partitions = partitionRows(g, assigned, fetched)
		out = append(out, g)
	}
	if len(shareNames) > 0 {
		offs, err := adm.DescribeShareGroupOffsets(ctx, shareNames...)
		for i := range out {
			if g := &out[i]; g.Type == "share" {
				shareRows(g, shareAssigned[g.Group], offs[g.Group], err)
				for _, p := range g.Partitions {
					wanted.Add(p.Topic, p.Partition)
				}
			}
		}
	}
	starts, ends, err := listStartEnd(e, wanted.Topics())
	if err != nil {
		return nil, err
	}
	for i := range out {
		g := &out[i]
		g.TotalLag = 0
		for j := range g.Partitions {
			p := &g.Partitions[j]
			if g.Type == "share" {
				fillLogOffsets(p, starts, ends)
			} else {
				fillLag(p, starts, ends)
			}
			if p.Lag > 0 {
				g.TotalLag += p.Lag
			}
		}
	}
	return out, nil
}

// listStartEnd lists the log start and end offsets of topics.
func listStartEnd(e *groupsEnv, topics []string) (starts, ends kadm.ListedOffsets, err error) {
	if len(topics) == 0 {
		return kadm.ListedOffsets{}, kadm.ListedOffsets{}, nil
	}
	ctx, cancel := e.ctx()
	defer cancel()
	adm := e.client()
	if starts, err = adm.ListStartOffsets(ctx, topics...); err != nil {
		return nil, nil, fmt.Errorf("list log start offsets: %w", err)
	}
	if ends, err = adm.ListEndOffsets(ctx, topics...); err != nil {
		return nil, nil, fmt.Errorf("list log end offsets: %w", err)
	}
	return starts, ends, nil
}

// fillLag sets p's log offsets and lag, counted as kadm and rpk count it.
func fillLag(p *partitionLag, starts, ends kadm.ListedOffsets) {
	p.LogStartOffset, p.LogEndOffset, p.Lag = -1, -1, -1
	if s, ok := starts.Lookup(p.Topic, p.Partition); ok && s.Err == nil {
		p.LogStartOffset = s.Offset
	}
	end, ok := ends.Lookup(p.Topic, p.Partition)
	switch {
	case !ok:
		if p.Error == "" {
			p.Error = kerr.UnknownTopicOrPartition.Error()
		}
		return
	case end.Err != nil:
		if p.Error == "" {
			p.Error = end.Err.Error()
		}
		return
	}
	p.LogEndOffset = end.Offset
	if p.Error != "" {
		return // the commit could not be fetched
	}
	switch {
	case p.CurrentOffset >= 0:
		p.Lag = end.Offset - p.CurrentOffset
	case p.LogStartOffset >= 0:
		p.Lag = end.Offset - p.LogStartOffset
	default:
		p.Lag = end.Offset
	}
	p.Lag = max(p.Lag, 0) // a commit past the end, or a log truncated meanwhile
}

// partitionRows is a row for every partition g is assigned or has
// committed, sorted by topic and partition, with its owner and commit.
func partitionRows(g describedGroup, assigned kadm.TopicsSet, commits kadm.OffsetResponses) []partitionLag {
	owner := map[string]map[int32]*groupMember{}
	for i := range g.Members {
		m := &g.Members[i]
		for _, tp := range m.Assignment {
			if owner[tp.Topic] == nil {
				owner[tp.Topic] = map[int32]*groupMember{}
			}
			for _, p := range tp.Partitions {
				owner[tp.Topic][p] = m
			}
		}
	}
	all := kadm.TopicsSet{}
	all.Merge(assigned)
	commits.Each(func(o kadm.OffsetResponse) { all.Add(o.Topic, o.Partition) })
	rows := []partitionLag{}
	all.Each(func(t string, p int32) {
		r := partitionLag{Topic: t, Partition: p, CurrentOffset: -1}
		if c, ok := commits.Lookup(t, p); ok {
			if c.Err != nil {
				r.Error = c.Err.Error()
			} else {
				r.CurrentOffset = c.At
			}
		}
		if m := owner[t][p]; m != nil {
			r.MemberID, r.InstanceID, r.ClientID, r.Host = m.MemberID, m.InstanceID, m.ClientID, m.Host
		}
		rows = append(rows, r)
	})
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Topic != rows[j].Topic {
			return rows[i].Topic < rows[j].Topic
		}
		return rows[i].Partition < rows[j].Partition
	})
	return rows
}

func fromClassic(d kadm.DescribedGroup) (describedGroup, kadm.TopicsSet) {
	g := describedGroup{
		Group:        d.Group,
		Coordinator:  broker{d.Coordinator.NodeID, d.Coordinator.Host, d.Coordinator.Port},
		State:        d.State,
		Type:         "classic",
		ProtocolType: d.ProtocolType,
		Balancer:     d.Protocol,
		Members:      []groupMember{},
	}
	assigned := kadm.TopicsSet{}
	for _, m := range d.Members {
		gm := groupMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: []topicPartitions{}}
		if c, ok := m.Assigned.AsConsumer(); ok {
			set := kadm.TopicsSet{}
			for _, t := range c.Topics {
				set.Add(t.Topic, t.Partitions...)
			}
			gm.Assignment = sortedAssignment(set)
			assigned.Merge(set)
		}
		g.Members = append(g.Members, gm)
	}
	return g, assigned
}

func fromConsumer(d kadm.DescribedConsumerGroup) (describedGroup, kadm.TopicsSet) {
	epoch, aepoch := d.Epoch, d.AssignmentEpoch
	g := describedGroup{
		Group:           d.Group,
		Coordinator:     broker{d.Coordinator.NodeID, d.Coordinator.Host, d.Coordinator.Port},
		State:           d.State,
		Type:            "consumer",
		ProtocolType:    "consumer",
		Balancer:        d.AssignorName,
		Epoch:           &epoch,
		AssignmentEpoch: &aepoch,
		Members:         []groupMember{},
	}
	for _, m := range d.Members {
		e := m.MemberEpoch
		g.Members = append(g.Members, groupMember{
			MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.ClientHost,
			MemberEpoch:      &e,
			Assignment:       sortedAssignment(m.Assignment),
			TargetAssignment: sortedAssignment(m.TargetAssignment),
		})
	}
	return g, d.AssignedPartitions()
}

func sortedAssignment(s kadm.TopicsSet) []topicPartitions {
	out := []topicPartitions{}
	for _, tp := range s.Sorted() {
		out = append(out, topicPartitions{Topic: tp.Topic, Partitions: tp.Partitions})
	}
	return out
}
