package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListStreamsJSON: the list's JSON, written a row at a time, is the
// document output writes in one piece.
func TestListStreamsJSON(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		var rows []listedGroup
		for i := range n {
			rows = append(rows, listedGroup{Group: fmt.Sprintf("g<%d>&", i), Coordinator: broker{1, "127.0.0.1", 9092}, State: "Empty", Type: "classic", CgpID: "cgp_x"})
		}
		if rows == nil {
			rows = []listedGroup{}
		}
		var want, got bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			t.Fatal(err)
		}
		if err := writeJSONRows(&got, len(rows), func(i int) listedGroup { return rows[i] }); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("%d rows:\n%s\nwant\n%s", n, got.String(), want.String())
		}
	}
}

// TestListStreamsTable: a table of one block is exactly the table
// newTable writes; a longer one goes out a block at a time, each aligned
// on the widest cells so far, every row once, in order.
func TestListStreamsTable(t *testing.T) {
	headers := []string{"GROUP", "STATE", "TYPE"}
	cell := func(i int) []string {
		return []string{fmt.Sprintf("g-%s", strings.Repeat("é", i%7)), "Empty", fmt.Sprint(i)}
	}
	for _, n := range []int{0, 1, 50, rowBlock - 1} {
		var want, got bytes.Buffer
		tab := newTable(&want, headers...)
		for i := range n {
			tab.row(stringsAny(cell(i))...)
		}
		tab.flush()
		if err := writeTableRows(&got, headers, n, func(i int, cells []string) []string { return append(cells, cell(i)...) }); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("%d rows differ from tabwriter's:\n%s\nwant\n%s", n, got.String(), want.String())
		}
	}

	// Longer: the third block's groups are wider, so the columns move
	// right from there, and only from there.
	n := 3 * rowBlock
	wide := func(i int) []string {
		g := fmt.Sprintf("g%d", i)
		if i >= 2*rowBlock {
			g += strings.Repeat("x", 20)
		}
		return []string{g, "Empty", fmt.Sprint(i)}
	}
	w := &countingWriter{}
	if err := writeTableRows(w, headers, n, func(i int, cells []string) []string { return append(cells, wide(i)...) }); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n")
	if len(lines) != n+1 || w.writes < 3 {
		t.Fatalf("%d lines in %d writes, want %d in at least 3", len(lines), w.writes, n+1)
	}
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != wide(i)[0] || f[2] != fmt.Sprint(i) {
			t.Fatalf("line %d: %q", i+1, l)
		}
		col := strings.Index(l, "Empty")
		wantCol := len("g2999") + 2
		if i >= 2*rowBlock-1 { // the header starts the first block, so blocks end one row early
			wantCol = len("g2999") + 20 + 2
		}
		if col != wantCol {
			t.Fatalf("line %d: STATE at column %d, want %d: %q", i+1, col, wantCol, l)
		}
	}
}

type countingWriter struct {
	bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.Buffer.Write(p)
}

// TestSortByGroup: the list comes out sorted by group whatever runs the
// brokers' answers make (one, a shard's each, more than are merged, none
// at all), every row once, and rows of one name in the order they came.
func TestSortByGroup(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		n := rng.IntN(300)
		runs := 1 + rng.IntN(80)
		rows := make([]listedGroup, n)
		for i := range rows {
			// Few names, so that some repeat: the coordinator tells rows
			// of one name apart.
			rows[i] = listedGroup{Group: fmt.Sprintf("g%03d", rng.IntN(200)), Coordinator: broker{ID: int32(i)}}
		}
		// Sort each of runs chunks, as a broker's shards answer.
		for r := range runs {
			lo, hi := r*n/runs, (r+1)*n/runs
			slices.SortStableFunc(rows[lo:hi], byGroup)
		}
		want := slices.Clone(rows)
		slices.SortStableFunc(want, byGroup)
		if got := sortByGroup(slices.Clone(rows), byGroup); !slices.Equal(got, want) {
			t.Fatalf("trial %d (%d rows, %d runs): got %v\nwant %v", trial, n, runs, got, want)
		}
	}
}

func byGroup(a, b listedGroup) int { return strings.Compare(a.Group, b.Group) }

// BenchmarkListRows: what `cohort groups list` does with a million
// listed groups once they are read (in 16 sorted runs, as one Cohort
// node's 16 shards answer): ordering them by name, and writing the
// table.
func BenchmarkListRows(b *testing.B) {
	const n, shards = 1_000_000, 16
	resp := kmsg.NewPtrListGroupsResponse()
	resp.Groups = make([]kmsg.ListGroupsResponseGroup, 0, n)
	for s := range shards {
		for i := s; i < n; i += shards {
			resp.Groups = append(resp.Groups, kmsg.ListGroupsResponseGroup{Group: fmt.Sprintf("quiet-%07d", i), GroupState: "Empty", GroupType: "classic"})
		}
	}
	b1 := broker{1, "127.0.0.1", 9092}
	l := &listing{answers: []listAnswer{{broker: b1, resp: resp}}, names: []string{b1.String()}}
	order := func() {
		l.order = make([]groupRef, n)
		for i := range l.order {
			l.order[i] = groupRef{0, uint32(i)}
		}
		l.order = sortByGroup(l.order, func(a, b groupRef) int { return strings.Compare(l.group(a).Group, l.group(b).Group) })
	}
	b.Run("sort", func(b *testing.B) {
		for b.Loop() {
			order()
		}
	})
	order()
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			if err := writeListTable(io.Discard, l, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}
