package sharecoord_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/sharecoord"
	"github.com/cohort-dev/cohort/store"
	"github.com/twmb/franz-go/pkg/kerr"
)

// topicID is the test topic's id.
var topicID = [16]byte{0xc0, 0x40, 0x4e}

// key is partition p of the test topic, seen by group g.
func key(g string, p int32) sharestate.Key {
	return sharestate.Key{Group: g, TopicID: topicID, Partition: p}
}

// name is a partition as the tests print it: group/partition.
func name(k sharestate.Key) string { return fmt.Sprintf("%s/%d", k.Group, k.Partition) }

// plog is a topic partition's log as the wire layer would read it:
// offsets 0 to end-1 in batches of batch records.
type plog struct{ end, batch int64 }

// read returns the log batches from the one holding from, up to max
// records (a fetch's byte limit), at least one batch.
func (l plog) read(from int64, max int) []sharestate.Range {
	var out []sharestate.Range
	n := int64(0)
	for first := from - from%l.batch; first < l.end && (len(out) == 0 || n < int64(max)); first += l.batch {
		last := min(first+l.batch, l.end) - 1
		out = append(out, sharestate.Range{First: first, Last: last})
		n += last - first + 1
	}
	return out
}

// fetch is what the wire layer's ShareFetch does for one partition: Next
// with the log's offsets, a read of the log from the offset it names,
// Acquire. It fails the test on an error code.
func fetch(t testing.TB, h *sharecoord.Host, k sharestate.Key, member string, l plog, max int, lim sharestate.Limits) sharestate.Acquired {
	t.Helper()
	a, code := tryFetch(context.Background(), h, k, member, l, max, lim)
	if code != 0 {
		t.Fatalf("fetch %s by %s: %v", name(k), member, kerr.ErrorForCode(code))
	}
	return a
}

// tryFetch is fetch that returns the error code of Next or Acquire.
func tryFetch(ctx context.Context, h *sharecoord.Host, k sharestate.Key, member string, l plog, max int, lim sharestate.Limits) (sharestate.Acquired, int16) {
	n := h.Next(ctx, sharestate.NextCmd{Key: k, Log: sharestate.Log{Latest: l.end, AtTime: -1}, Reset: sharestate.ResetEarliest, Limits: lim})
	if n.Code != 0 {
		return sharestate.Acquired{}, n.Code
	}
	if n.Full || n.Offset >= l.end {
		return sharestate.Acquired{}, 0
	}
	a := h.Acquire(ctx, sharestate.AcquireCmd{Key: k, Member: member, FetchOffset: n.Offset, Batches: l.read(n.Offset, max), MaxRecords: max, Limits: lim})
	return a, a.Code
}

// ack acknowledges first..last with one type and fails the test on an
// error code.
func ack(t testing.TB, h *sharecoord.Host, k sharestate.Key, member string, first, last int64, typ sharestate.AckType) {
	t.Helper()
	r := h.Ack(context.Background(), sharestate.AckCmd{Key: k, Member: member, Acks: []sharestate.Ack{{First: first, Last: last, Types: []sharestate.AckType{typ}}}})
	if r.Code != 0 {
		t.Fatalf("ack %d-%d of %s by %s: %v", first, last, name(k), member, kerr.ErrorForCode(r.Code))
	}
}

// render is acquired records as "first-last/count ...".
func render(a sharestate.Acquired) string {
	out := ""
	for i, r := range a.Records {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprintf("%d-%d/%d", r.First, r.Last, r.DeliveryCount)
	}
	return out
}

// startHost starts a host on st and closes it when the test ends (Close
// may be called before).
func startHost(t testing.TB, cfg sharecoord.Config) *sharecoord.Host {
	t.Helper()
	h, err := sharecoord.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// startGlobal starts the global unit on st, closed when the test ends.
func startGlobal(t testing.TB, st store.Store) *coordinator.GlobalUnit {
	t.Helper()
	u, err := coordinator.StartGlobal(coordinator.GlobalConfig{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Close)
	return u
}

// signalled reports whether w's C is signalled within d.
func signalled(w *sharecoord.Watch, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.C():
		return true
	case <-t.C:
		return false
	}
}

// quiet reports whether w's C is not signalled now.
func quiet(w *sharecoord.Watch) bool {
	select {
	case <-w.C():
		return false
	default:
		return true
	}
}
