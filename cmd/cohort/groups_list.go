package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
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
		rows, err := listGroups(e, sf, tf)
		if err == nil {
			err = addCohortIDs(e, rows)
		}
		if err != nil {
			return err
		}
		// Written as it is formatted, a block at a time: a million
		// groups are not one table or one JSON document held whole.
		if e.json {
			return writeJSONRows(e.stdout, rows)
		}
		headers := []string{"GROUP", "COORDINATOR", "STATE", "TYPE", "PROTOCOL-TYPE"}
		if e.adminURL != "" {
			headers = append(headers, "CGP-ID", "RRL")
		}
		return writeTableRows(e.stdout, headers, len(rows), func(i int, cells []string) []string {
			r := rows[i]
			cells = append(cells, r.Group, r.Coordinator.String(), r.State, r.Type, r.ProtocolType)
			if e.adminURL != "" {
				cells = append(cells, dash(r.CgpID), dash(r.RRL))
			}
			return cells
		})
	}
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
	block := [][]string{headers}
	var buf []byte
	flush := func() error {
		for _, r := range block {
			for i, c := range r[:len(r)-1] {
				widths[i] = max(widths[i], utf8.RuneCountInString(c))
			}
		}
		buf = buf[:0]
		for _, r := range block {
			for i, c := range r {
				buf = append(buf, c...)
				if i < len(r)-1 {
					for range widths[i] - utf8.RuneCountInString(c) + 2 {
						buf = append(buf, ' ')
					}
				}
			}
			buf = append(buf, '\n')
		}
		block = block[:0]
		_, err := w.Write(buf)
		return err
	}
	for i := range n {
		block = append(block, row(i, make([]string, 0, len(headers))))
		if len(block) == rowBlock {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// writeJSONRows writes rows as output's indented JSON array, one row at
// a time.
func writeJSONRows[T any](w io.Writer, rows []T) error {
	if len(rows) == 0 {
		_, err := io.WriteString(w, "[]\n")
		return err
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("[\n")
	for i, r := range rows {
		b, err := json.MarshalIndent(r, "  ", "  ")
		if err != nil {
			return err
		}
		bw.WriteString("  ")
		bw.Write(b)
		if i < len(rows)-1 {
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
func listGroups(e *groupsEnv, states, types []string) ([]listedGroup, error) {
	ctx, cancel := e.ctx()
	defer cancel()
	req := kmsg.NewPtrListGroupsRequest()
	req.StatesFilter, req.TypesFilter = states, types
	rows := []listedGroup{}
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
	for _, shard := range e.kgo().RequestSharded(ctx, req) {
		if shard.Err != nil {
			return nil, shard.Err
		}
		resp := shard.Resp.(*kmsg.ListGroupsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, fmt.Errorf("broker %d: %w", shard.Meta.NodeID, err)
		}
		for _, g := range resp.Groups {
			if !in(states, g.GroupState) || !in(types, g.GroupType) {
				continue
			}
			rows = append(rows, listedGroup{
				Group:        g.Group,
				Coordinator:  broker{shard.Meta.NodeID, shard.Meta.Host, shard.Meta.Port},
				State:        g.GroupState,
				Type:         g.GroupType,
				ProtocolType: g.ProtocolType,
			})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Group < rows[j].Group })
	return rows, nil
}
