package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listedGroup is one row of `cohort groups list`.
type listedGroup struct {
	Group        string `json:"group"`
	Coordinator  broker `json:"coordinator"`
	State        string `json:"state"`
	Type         string `json:"type"` // classic, consumer or share ("" from a broker older than ListGroups v5)
	ProtocolType string `json:"protocol_type"`
	// CgpID and RRL need --admin-url (groups_cohort.go).
	CgpID string `json:"cgp_id,omitempty"`
	RRL   string `json:"rrl,omitempty"`
}

// broker is a broker as the output names it.
type broker struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

func (b broker) String() string {
	return fmt.Sprintf("%d %s", b.ID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
}

func listFlags(fs *flag.FlagSet) func(*groupsEnv, []string) error {
	states := fs.String("state", "", "only groups in these `states`, comma-separated: Empty, Stable, PreparingRebalance, CompletingRebalance, Assigning, Reconciling, Dead (case-insensitive; a share group is Empty or Stable)")
	types := fs.String("type", "", "only groups of these `types`, comma-separated: classic, consumer, share (KIP-932)")
	return func(e *groupsEnv, _ []string) error {
		sf, tf := splitList(*states), splitList(*types)
		for _, t := range tf {
			if t != "classic" && t != "consumer" && t != "share" {
				return usageError(fmt.Sprintf("--type takes classic, consumer or share, not %q", t))
			}
		}
		l, err := listGroups(e, sf, tf)
		if err == nil {
			err = addCohortIDs(e, l)
		}
		if err != nil {
			return err
		}
		// Written as it is formatted, a block at a time: a million
		// groups are not one table or one JSON document held whole.
		if e.json {
			return writeJSONRows(e.stdout, len(l.order), l.row)
		}
		return writeListTable(e.stdout, l, e.adminURL != "")
	}
}

// listing is what `cohort groups list` lists: every broker's answer as
// kmsg decoded it, and the order of their groups by name. A row is made
// from them as it is written: a million rows copied out of the answers
// and then merged were two slices of 128 MB for the collector to scan.
type listing struct {
	answers []listAnswer
	// names are the brokers' names as the table shows them, by answer,
	// formatted once.
	names []string
	order []groupRef
	// ids are the groups' cgp_ ids and RRLs by place in order, with
	// --admin-url (addCohortIDs); else nil.
	ids []cohortID
}

// groupRef is a group of a listing: answers[answer].resp.Groups[group].
type groupRef struct{ answer, group uint32 }

// cohortID is what the admin API adds to a listed group.
type cohortID struct{ CgpID, RRL string }

func (l *listing) group(r groupRef) *kmsg.ListGroupsResponseGroup {
	return &l.answers[r.answer].resp.Groups[r.group]
}

// row returns the i-th row of the list.
func (l *listing) row(i int) listedGroup {
	r := l.order[i]
	g := l.group(r)
	row := listedGroup{
		Group:        g.Group,
		Coordinator:  l.answers[r.answer].broker,
		State:        g.GroupState,
		Type:         g.GroupType,
		ProtocolType: g.ProtocolType,
	}
	if l.ids != nil {
		row.CgpID, row.RRL = l.ids[i].CgpID, l.ids[i].RRL
	}
	return row
}

// writeListTable writes the list as a table; withIDs adds the cgp_ id
// and RRL columns.
func writeListTable(w io.Writer, l *listing, withIDs bool) error {
	headers := []string{"GROUP", "COORDINATOR", "STATE", "TYPE", "PROTOCOL-TYPE"}
	if withIDs {
		headers = append(headers, "CGP-ID", "RRL")
	}
	return writeTableRows(w, headers, len(l.order), func(i int, cells []string) []string {
		r := l.row(i)
		cells = append(cells, r.Group, l.names[l.order[i].answer], r.State, r.Type, r.ProtocolType)
		if withIDs {
			cells = append(cells, dash(r.CgpID), dash(r.RRL))
		}
		return cells
	})
}

// rowBlock is how many rows writeTableRows aligns and writes at once.
const rowBlock = 1000

// writeTableRows writes a table as newTable does (columns two spaces
// apart, the last cell unpadded), rowBlock rows at a time: each block is
// aligned on the widest cell of each column so far, so that a long list
// starts at once and holds one block, and a list of one block is exactly
// what text/tabwriter writes. row appends row i's cells to cells.
func writeTableRows(w io.Writer, headers []string, n int, row func(i int, cells []string) []string) error {
	widths := make([]int, len(headers))
	// The block's cells, one slice for all its rows (a slice a row was
	// a million allocations), and where each row's begin.
	cells, bounds := append([]string(nil), headers...), []int{0}
	var buf []byte
	flush := func() error {
		bounds = append(bounds, len(cells))
		for r := range len(bounds) - 1 {
			row := cells[bounds[r] : bounds[r+1]-1]
			for i, c := range row {
				widths[i] = max(widths[i], cellWidth(c))
			}
		}
		buf = buf[:0]
		for r := range len(bounds) - 1 {
			row := cells[bounds[r]:bounds[r+1]]
			for i, c := range row {
				buf = append(buf, c...)
				if i < len(row)-1 {
					buf = appendSpaces(buf, widths[i]-cellWidth(c)+2)
				}
			}
			buf = append(buf, '\n')
		}
		cells, bounds = cells[:0], bounds[:0]
		_, err := w.Write(buf)
		return err
	}
	for i := range n {
		bounds = append(bounds, len(cells))
		cells = row(i, cells)
		if len(bounds) == rowBlock {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// cellWidth is a cell's width as text/tabwriter counts it: its runes.
func cellWidth(c string) int {
	for i := 0; i < len(c); i++ {
		if c[i] >= utf8.RuneSelf {
			return utf8.RuneCountInString(c)
		}
	}
	return len(c)
}

// spaces pads cells a run at a time rather than a byte at a time.
const spaces = "                                                                "

func appendSpaces(buf []byte, n int) []byte {
	for n > len(spaces) {
		buf = append(buf, spaces...)
		n -= len(spaces)
	}
	return append(buf, spaces[:n]...)
}

// writeJSONRows writes n rows, row(i) the i-th, as output's indented
// JSON array, one row at a time.
func writeJSONRows[T any](w io.Writer, n int, row func(int) T) error {
	if n == 0 {
		_, err := io.WriteString(w, "[]\n")
		return err
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("[\n")
	for i := range n {
		b, err := json.MarshalIndent(row(i), "  ", "  ")
		if err != nil {
			return err
		}
		bw.WriteString("  ")
		bw.Write(b)
		if i < n-1 {
			bw.WriteByte(',')
		}
		bw.WriteByte('\n')
	}
	bw.WriteString("]\n")
	return bw.Flush()
}

// splitList splits a comma-separated flag value, lower-cased and trimmed.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.ToLower(strings.TrimSpace(f)); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// listGroups asks every broker for its groups (ListGroups goes to each
// coordinator). The filters go in the request (states since v4, types
// since v5, KIP-518 and KIP-848) and are applied here too, for brokers
// that ignore them.
func listGroups(e *groupsEnv, states, types []string) (*listing, error) {
	ctx, cancel := e.ctx()
	defer cancel()
	req := kmsg.NewPtrListGroupsRequest()
	req.StatesFilter, req.TypesFilter = states, types
	in := func(set []string, v string) bool {
		if len(set) == 0 || v == "" {
			return true
		}
		for _, s := range set {
			if strings.EqualFold(s, v) {
				return true
			}
		}
		return false
	}
	answers, err := askEveryBroker(ctx, e.kgo(), req)
	if err != nil {
		return nil, err
	}
	l := &listing{answers: answers, names: make([]string, len(answers))}
	n := 0
	for i, a := range answers {
		if a.err != nil {
			return nil, fmt.Errorf("broker %d: %w", a.broker.ID, a.err)
		}
		if err := kerr.ErrorForCode(a.resp.ErrorCode); err != nil {
			return nil, fmt.Errorf("broker %d: %w", a.broker.ID, err)
		}
		if len(states) > 0 || len(types) > 0 {
			a.resp.Groups = slices.DeleteFunc(a.resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
				return !in(states, g.GroupState) || !in(types, g.GroupType)
			})
		}
		l.names[i] = a.broker.String()
		n += len(a.resp.Groups)
	}
	l.order = make([]groupRef, 0, n)
	for i, a := range answers {
		for j := range a.resp.Groups {
			l.order = append(l.order, groupRef{uint32(i), uint32(j)})
		}
	}
	l.order = sortByGroup(l.order, func(a, b groupRef) int { return strings.Compare(l.group(a).Group, l.group(b).Group) })
	return l, nil
}

// listAnswer is one broker's answer to ListGroups.
type listAnswer struct {
	broker broker
	resp   *kmsg.ListGroupsResponse
	err    error
}

// askEveryBroker sends req to every broker of the cluster at once, as
// kgo's RequestSharded does for a ListGroups, but with the answers
// decoded by kmsg's UnsafeReadFrom (unsafeListGroups): a million
// groups' names, states and types then alias each answer's bytes, which
// the list keeps whole anyway, rather than being three million strings
// of their own.
func askEveryBroker(ctx context.Context, cl *kgo.Client, req *kmsg.ListGroupsRequest) ([]listAnswer, error) {
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{} // the brokers only
	m, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(m.Brokers, func(a, b kmsg.MetadataResponseBroker) int { return cmp.Compare(a.NodeID, b.NodeID) })
	answers := make([]listAnswer, len(m.Brokers))
	var wg sync.WaitGroup
	for i, b := range m.Brokers {
		answers[i].broker = broker{b.NodeID, b.Host, b.Port}
		wg.Go(func() {
			r, err := cl.Broker(int(b.NodeID)).Request(ctx, unsafeListGroups{req})
			if err != nil {
				answers[i].err = err
				return
			}
			answers[i].resp = r.(unsafeListGroupsResponse).ListGroupsResponse
		})
	}
	wg.Wait()
	return answers, nil
}

// unsafeListGroups is a ListGroups request whose answer is decoded
// without copying its strings (kmsg's UnsafeReadFrom). kgo reads each
// answer into a buffer of its own, which the strings then keep.
type unsafeListGroups struct{ *kmsg.ListGroupsRequest }

func (r unsafeListGroups) ResponseKind() kmsg.Response {
	return unsafeListGroupsResponse{r.ListGroupsRequest.ResponseKind().(*kmsg.ListGroupsResponse)}
}

type unsafeListGroupsResponse struct{ *kmsg.ListGroupsResponse }

func (r unsafeListGroupsResponse) ReadFrom(b []byte) error { return r.UnsafeReadFrom(b) }

// sortByGroup returns rows sorted by compare (by group name), stably.
// Each broker's answer comes as a few sorted runs (Cohort's, one per
// coordinator shard), so the runs are found and merged: a million rows
// merged from sixteen runs take a tenth of the time that sorting them
// takes.
func sortByGroup[T any](rows []T, compare func(a, b T) int) []T {
	var starts []int
	for i := range rows {
		if i == 0 || compare(rows[i], rows[i-1]) < 0 {
			starts = append(starts, i)
		}
	}
	if len(starts) <= 1 {
		return rows
	}
	if len(starts) > 64 { // not runs worth merging
		slices.SortStableFunc(rows, compare)
		return rows
	}
	// A heap of the runs by their next row (ties by run, so that the
	// merge is stable).
	type run struct{ next, end int }
	runs := make([]run, len(starts))
	for i, s := range starts {
		runs[i] = run{s, len(rows)}
		if i+1 < len(starts) {
			runs[i].end = starts[i+1]
		}
	}
	less := func(a, b int) bool {
		c := compare(rows[runs[a].next], rows[runs[b].next])
		return c < 0 || c == 0 && a < b
	}
	heap := make([]int, len(runs))
	for i := range heap {
		heap[i] = i
	}
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(heap) {
				return
			}
			if c+1 < len(heap) && less(heap[c+1], heap[c]) {
				c++
			}
			if !less(heap[c], heap[i]) {
				return
			}
			heap[i], heap[c] = heap[c], heap[i]
			i = c
		}
	}
	for i := len(heap)/2 - 1; i >= 0; i-- {
		down(i)
	}
	out := make([]T, 0, len(rows))
	for len(heap) > 0 {
		r := &runs[heap[0]]
		out = append(out, rows[r.next])
		if r.next++; r.next == r.end {
			heap[0] = heap[len(heap)-1]
			heap = heap[:len(heap)-1]
		}
		down(0)
	}
	return out
}
