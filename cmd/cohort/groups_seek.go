package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// seekTarget is a parsed --to: exactly one of its kinds.
type seekTarget struct {
	start, end bool
	offset     int64     // ≥ 0 when an offset was given, else -1
	at         time.Time // a timestamp, or now less a duration
}

// parseSeekTarget reads --to as kafka-consumer-groups.sh's --to-earliest,
// --to-latest, --to-offset, --to-datetime and --by-duration: start, end,
// an offset, an RFC 3339 time, or a Go duration with a minus sign (-90s,
// -15m, -2h) meaning that long before now.
func parseSeekTarget(v string, now time.Time) (seekTarget, error) {
	t := seekTarget{offset: -1}
	switch strings.ToLower(v) {
	case "start", "earliest", "beginning":
		t.start = true
		return t, nil
	case "end", "latest":
		t.end = true
		return t, nil
	case "":
		return t, errors.New("--to is required: start, end, an offset, an RFC 3339 time or -DURATION")
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return t, fmt.Errorf("--to %s: an offset must not be negative (a duration ago needs a unit, e.g. -15m)", v)
		}
		t.offset = n
		return t, nil
	}
	if strings.HasPrefix(v, "-") {
		d, err := time.ParseDuration(v)
		if err != nil {
			return t, fmt.Errorf("--to %s: not a duration: %v", v, err)
		}
		t.at = now.Add(d)
		return t, nil
	}
	at, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return t, fmt.Errorf("--to %q: use start, end, an offset, an RFC 3339 time (2026-01-02T15:04:05Z) or -DURATION (-15m)", v)
	}
	t.at = at
	return t, nil
}

// seekRow is one partition of a seek's plan and result.
type seekRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// CurrentOffset is the committed offset before the seek, -1 if none.
	CurrentOffset int64  `json:"current_offset"`
	NewOffset     int64  `json:"new_offset"`
	Error         string `json:"error,omitempty"`
}

// seekResult is `cohort groups seek`'s output.
type seekResult struct {
	Group      string    `json:"group"`
	DryRun     bool      `json:"dry_run"`
	Partitions []seekRow `json:"partitions"`
}

func seekFlags(fs *flag.FlagSet) func(*groupsEnv, []string) error {
	var topics topicFlag
	to := fs.String("to", "", "where to: `start`, end, an OFFSET (clamped to the log's start and end), an RFC 3339 TIMESTAMP (the first offset at or after it; end if none), or -DURATION ago (-15m, -2h)")
	fs.Var(&topics, "topics", "`T[:P,...]`: the topics, or some of their partitions, to seek; repeatable (default: every partition the group has committed)")
	dry := fs.Bool("dry-run", false, "print the plan and commit nothing")
	return func(e *groupsEnv, args []string) error {
		group := args[0]
		target, err := parseSeekTarget(*to, time.Now())
		if err != nil {
			return usageError(err.Error())
		}
		typ, err := seekAllowed(e, group)
		if err != nil {
			return err
		}
		share := typ == "share"
		ctx, cancel := e.ctx()
		defer cancel()
		adm := e.client()
		// A share group's current offsets are its start offsets
		// (KIP-932), which seek moves as kafka-share-groups.sh
		// --reset-offsets does.
		var current kadm.OffsetResponses
		if share {
			current, err = shareStartOffsets(e, group)
		} else if current, err = adm.FetchOffsets(ctx, group); err != nil {
			err = fmt.Errorf("group %q: fetch offsets: %w", group, err)
		}
		if err != nil {
			return err
		}
		var set kadm.TopicsSet
		if len(topics.order) > 0 {
			if set, err = topics.resolve(e); err != nil {
				return err
			}
		} else {
			set = kadm.TopicsSet{}
			current.Each(func(o kadm.OffsetResponse) {
				if o.Err == nil {
					set.Add(o.Topic, o.Partition)
				}
			})
			if len(set) == 0 && share {
				return fmt.Errorf("share group %q has no start offsets: name the partitions with --topics", group)
			}
			if len(set) == 0 {
				return fmt.Errorf("group %q has no committed offsets: name the partitions with --topics", group)
			}
		}
		plan, err := seekPlan(e, target, set, current)
		if err != nil {
			return err
		}
		res := seekResult{Group: group, DryRun: *dry, Partitions: plan}
		var failed []string
		if !*dry {
			commit := kadm.Offsets{}
			for _, r := range plan {
				if r.Error == "" {
					commit.Add(kadm.Offset{Topic: r.Topic, Partition: r.Partition, At: r.NewOffset, LeaderEpoch: -1})
				}
			}
			lookup, err := seekCommit(ctx, e, group, share, commit)
			if err != nil {
				return err
			}
			for i := range res.Partitions {
				r := &res.Partitions[i]
				if err := lookup(r.Topic, r.Partition); err != nil {
					r.Error = err.Error()
				}
			}
		}
		for _, r := range res.Partitions {
			if r.Error != "" {
				failed = append(failed, fmt.Sprintf("%s/%d: %s", r.Topic, r.Partition, r.Error))
			}
		}
		if err := e.output(res, func(w io.Writer) {
			t := newTable(w, "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", "STATUS")
			status := "committed"
			if *dry {
				status = "dry run"
			}
			for _, r := range res.Partitions {
				t.row(r.Topic, r.Partition, offsetCell(r.CurrentOffset), offsetCell(r.NewOffset), statusCell(r.Error, status))
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

// seekCommit commits the new offsets: a simple (admin) OffsetCommit,
// generation -1 and no member id, which a coordinator takes only while
// the group has no members; a share group's AlterShareGroupOffsets, which
// Kafka takes only while it is empty. It returns each partition's error.
func seekCommit(ctx context.Context, e *groupsEnv, group string, share bool, commit kadm.Offsets) (func(string, int32) error, error) {
	if share {
		resp, err := e.client().AlterShareGroupOffsets(ctx, group, commit)
		if err != nil {
			return nil, fmt.Errorf("group %q: alter share group offsets: %w", group, err)
		}
		return func(t string, p int32) error { err, _ := resp.Lookup(t, p); return err }, nil
	}
	resp, err := e.client().CommitOffsets(ctx, group, commit)
	if err != nil {
		return nil, fmt.Errorf("group %q: commit: %w", group, err)
	}
	return func(t string, p int32) error { c, _ := resp.Lookup(t, p); return c.Err }, nil
}

// seekAllowed refuses a group with members, as kafka-consumer-groups.sh
// and kafka-share-groups.sh --reset-offsets do: only an Empty or Dead
// (unknown) group may be reset, since live members would overwrite the
// new offsets (a share group's would go on from where they are). It
// returns the group's type ("" for an unknown group, which a commit
// creates as a classic group).
func seekAllowed(e *groupsEnv, group string) (string, error) {
	gs, err := describeGroups(e, []string{group})
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		return "", nil // Dead: committing creates it, as Kafka allows
	case err != nil:
		return "", err
	}
	if g := gs[0]; g.State != "Empty" && g.State != "Dead" {
		return "", fmt.Errorf("group %q is %s with %d members: offsets can be reset only while it is Empty (stop its consumers first)", group, g.State, len(g.Members))
	}
	return gs[0].Type, nil
}

// seekPlan computes each partition's new offset.
func seekPlan(e *groupsEnv, target seekTarget, set kadm.TopicsSet, current kadm.OffsetResponses) ([]seekRow, error) {
	starts, ends, err := listStartEnd(e, set.Topics())
	if err != nil {
		return nil, err
	}
	var byTime kadm.ListedOffsets
	if !target.at.IsZero() {
		ctx, cancel := e.ctx()
		defer cancel()
		// ListOffsets by time: the first offset whose timestamp is at or
		// after it; kadm gives the end offset where there is none.
		if byTime, err = e.client().ListOffsetsAfterMilli(ctx, target.at.UnixMilli(), set.Topics()...); err != nil {
			return nil, fmt.Errorf("list offsets by time: %w", err)
		}
	}
	rows := []seekRow{}
	set.Each(func(t string, p int32) {
		r := seekRow{Topic: t, Partition: p, CurrentOffset: -1, NewOffset: -1}
		if c, ok := current.Lookup(t, p); ok && c.Err == nil {
			r.CurrentOffset = c.At
		}
		start, sok := starts.Lookup(t, p)
		end, eok := ends.Lookup(t, p)
		switch {
		case !sok || !eok:
			r.Error = kerr.UnknownTopicOrPartition.Error()
		case start.Err != nil:
			r.Error = start.Err.Error()
		case end.Err != nil:
			r.Error = end.Err.Error()
		case target.start:
			r.NewOffset = start.Offset
		case target.end:
			r.NewOffset = end.Offset
		case target.offset >= 0:
			r.NewOffset = min(max(target.offset, start.Offset), end.Offset)
		default:
			if o, ok := byTime.Lookup(t, p); !ok {
				r.Error = kerr.UnknownTopicOrPartition.Error()
			} else if o.Err != nil {
				r.Error = o.Err.Error()
			} else {
				r.NewOffset = min(max(o.Offset, start.Offset), end.Offset)
			}
		}
		rows = append(rows, r)
	})
	sortSeekRows(rows)
	return rows, nil
}

func sortSeekRows(rs []seekRow) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Topic != rs[j].Topic {
			return rs[i].Topic < rs[j].Topic
		}
		return rs[i].Partition < rs[j].Partition
	})
}
