package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// groupLag is one group in `cohort groups lag`.
type groupLag struct {
	Group    string `json:"group"`
	Type     string `json:"type"`
	State    string `json:"state"`
	TotalLag int64  `json:"total_lag"`
	// Status and TimeToClearSeconds need --admin-url (groups_cohort.go).
	Status             string         `json:"status,omitempty"`
	TimeToClearSeconds *float64       `json:"time_to_clear_seconds,omitempty"`
	Partitions         []partitionLag `json:"partitions"`
}

func lagFlags(fs *flag.FlagSet) func(*groupsEnv, []string) error {
	verbose := fs.Bool("verbose", false, "a share group's LEADER-EPOCH too, as kafka-share-groups.sh --verbose")
	return func(e *groupsEnv, names []string) error {
		gs, err := describeGroups(e, names)
		if err == nil {
			err = addCohortInfo(e, gs)
		}
		if err != nil {
			return err
		}
		out := make([]groupLag, len(gs))
		var shares []describedGroup
		for i, g := range gs {
			out[i] = groupLag{g.Group, g.Type, g.State, g.TotalLag, g.Status, g.TimeToClearSeconds, g.Partitions}
			if g.Type == "share" {
				shares = append(shares, g)
			}
		}
		status := e.adminURL != ""
		return e.output(out, func(w io.Writer) {
			// Share groups commit no offsets: their partitions are a
			// table of their own, kafka-share-groups.sh's columns.
			if len(shares) < len(out) {
				headers := []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID"}
				if status {
					headers = append(headers, "STATUS")
				}
				t := newTable(w, headers...)
				for _, g := range out {
					if g.Type == "share" {
						continue
					}
					for _, p := range g.Partitions {
						cells := []any{g.Group, p.Topic, p.Partition, offsetCell(p.CurrentOffset), offsetCell(p.LogEndOffset), offsetCell(p.Lag), dash(p.MemberID)}
						if status {
							cells = append(cells, dash(p.Status))
						}
						t.row(cells...)
					}
				}
				t.flush()
				fmt.Fprintln(w)
			}
			if len(shares) > 0 {
				printShareOffsets(w, shares, *verbose, status)
				fmt.Fprintln(w)
			}
			headers := []string{"GROUP", "STATE", "TOTAL-LAG"}
			if status {
				headers = append(headers, "STATUS", "TIME-TO-CLEAR")
			}
			s := newTable(w, headers...)
			for _, g := range out {
				cells := []any{g.Group, g.State, g.TotalLag}
				if status {
					cells = append(cells, dash(g.Status), timeToClearCell(g.TimeToClearSeconds))
				}
				s.row(cells...)
			}
			s.flush()
		})
	}
}

// deletedGroup is one group in `cohort groups delete`.
type deletedGroup struct {
	Group string `json:"group"`
	Error string `json:"error,omitempty"`
}

func deleteFlags(fs *flag.FlagSet) func(*groupsEnv, []string) error {
	return func(e *groupsEnv, names []string) error {
		ctx, cancel := e.ctx()
		defer cancel()
		resp, err := e.client().DeleteGroups(ctx, names...)
		if err != nil {
			return err
		}
		out := []deletedGroup{}
		var failed []string
		for _, n := range names {
			r, ok := resp[n]
			if !ok {
				continue // named twice
			}
			delete(resp, n)
			out = append(out, deletedGroup{n, errString(r.Err)})
			if r.Err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", n, r.Err))
			}
		}
		if err := e.output(out, func(w io.Writer) {
			t := newTable(w, "GROUP", "STATUS")
			for _, d := range out {
				t.row(d.Group, statusCell(d.Error, "deleted"))
			}
			t.flush()
		}); err != nil {
			return err
		}
		if len(failed) > 0 {
			return errors.New(strings.Join(failed, "; "))
		}
		return nil
	}
}

func statusCell(err, ok string) string {
	if err != "" {
		return err
	}
	return ok
}

// topicFlag collects --topic/--topics values, T or T:P,P,…, repeatable and
// comma-separated between topics (T1,T2:0,1 is T1 and T2's 0 and 1).
type topicFlag struct {
	order []string
	parts map[string][]int32 // nil: every partition
}

func (f *topicFlag) String() string { return strings.Join(f.order, ",") }

func (f *topicFlag) Set(v string) error {
	if f.parts == nil {
		f.parts = map[string][]int32{}
	}
	// T:P,P,T2 would be ambiguous; a topic after a partition list needs
	// its own flag. Split on ":" first: "a,b:0,1" is a, and b's 0 and 1.
	var topics []string
	var ps string
	if i := strings.LastIndexByte(v, ':'); i >= 0 {
		topics, ps = strings.Split(v[:i], ","), v[i+1:]
	} else {
		topics = strings.Split(v, ",")
	}
	for i, t := range topics {
		t = strings.TrimSpace(t)
		if t == "" || strings.ContainsRune(t, ':') {
			return fmt.Errorf("bad topic in %q", v)
		}
		if _, ok := f.parts[t]; !ok {
			f.order = append(f.order, t)
			f.parts[t] = nil
		}
		if i < len(topics)-1 || ps == "" {
			continue
		}
		for _, p := range strings.Split(ps, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
			if err != nil || n < 0 {
				return fmt.Errorf("bad partition %q in %q", p, v)
			}
			f.parts[t] = append(f.parts[t], int32(n))
		}
	}
	return nil
}

// resolve returns the topics and partitions named, every partition (from
// Metadata) for a topic named without any; a topic the brokers do not
// know is an error.
func (f *topicFlag) resolve(e *groupsEnv) (kadm.TopicsSet, error) {
	set := kadm.TopicsSet{}
	var whole []string
	for _, t := range f.order {
		if ps := f.parts[t]; ps != nil {
			set.Add(t, ps...)
		} else {
			whole = append(whole, t)
		}
	}
	if len(whole) == 0 {
		return set, nil
	}
	ctx, cancel := e.ctx()
	defer cancel()
	details, err := e.client().ListTopics(ctx, whole...)
	if err != nil {
		return nil, err
	}
	for _, t := range whole {
		d, ok := details[t]
		switch {
		case !ok:
			return nil, fmt.Errorf("topic %q does not exist", t)
		case d.Err != nil:
			return nil, fmt.Errorf("topic %q: %w", t, d.Err)
		}
		set.Add(t, d.Partitions.Numbers()...)
	}
	return set, nil
}

// offsetResult is one partition in delete-offsets and seek output.
type offsetResult struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Error     string `json:"error,omitempty"`
}

func deleteOffsetsFlags(fs *flag.FlagSet) func(*groupsEnv, []string) error {
	var topics topicFlag
	fs.Var(&topics, "topic", "`T[:P,...]`: a topic, or some of its partitions, whose committed offsets to delete; repeatable (a share group's: whole topics, whose share-partition state is deleted)")
	return func(e *groupsEnv, args []string) error {
		group := args[0]
		if len(topics.order) == 0 {
			return usageError("--topic is required")
		}
		if _, ok := shareGroup(e, group); ok {
			return deleteShareOffsets(e, group, &topics)
		}
		set, err := topics.resolve(e)
		if err != nil {
			return err
		}
		ctx, cancel := e.ctx()
		defer cancel()
		resp, err := e.client().DeleteOffsets(ctx, group, set)
		if err != nil {
			return fmt.Errorf("group %q: %w", group, err)
		}
		out := []offsetResult{}
		var failed []string
		set.Each(func(t string, p int32) {
			r := offsetResult{Topic: t, Partition: p}
			if ps, ok := resp[t]; ok {
				if err := ps[p]; err != nil {
					r.Error = err.Error()
					failed = append(failed, fmt.Sprintf("%s/%d: %v", t, p, err))
				}
			}
			out = append(out, r)
		})
		sortResults(out)
		sort.Strings(failed)
		if err := e.output(out, func(w io.Writer) {
			t := newTable(w, "TOPIC", "PARTITION", "STATUS")
			for _, r := range out {
				t.row(r.Topic, r.Partition, statusCell(r.Error, "deleted"))
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
}

func sortResults(rs []offsetResult) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Topic != rs[j].Topic {
			return rs[i].Topic < rs[j].Topic
		}
		return rs[i].Partition < rs[j].Partition
	})
}
