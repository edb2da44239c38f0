package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
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
		if err := writeJSONRows(&got, rows); err != nil {
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
