package kafka

import (
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestShareSessions: Kafka's share session rules (ShareSessionCache,
// SharePartitionManager.newContext and acknowledgeSessionUpdate): epochs,
// the errors for a wrong one or a missing session, incremental adds and
// forgets, the limit, and a closed connection taking its sessions with it
// and releasing its members.
func TestShareSessions(t *testing.T) {
	var mu sync.Mutex
	var left []shareSessionKey
	var leftParts [][]sharePartitionID
	c := newShareSessions(2, func(k shareSessionKey, parts []sharePartitionID) {
		mu.Lock()
		left, leftParts = append(left, k), append(leftParts, parts)
		mu.Unlock()
	})
	a := shareSessionKey{"", "g", "a"}
	p := func(topic byte, part int32) sharePartitionID { return sharePartitionID{[16]byte{topic}, part} }
	want := func(what string, got shareContext, code int16, wantCode *kerr.Error, parts ...sharePartitionID) {
		t.Helper()
		var w int16
		if wantCode != nil {
			w = wantCode.Code
		}
		if code != w {
			t.Fatalf("%s: code %v, want %v", what, kerr.ErrorForCode(code), wantCode)
		}
		if code == 0 && !slices.Equal(got.parts, parts) {
			t.Fatalf("%s: partitions %v, want %v", what, got.parts, parts)
		}
	}
	conn1, conn2 := new(int), new(int)

	ctx, code := c.fetch(conn1, a, 1, nil, nil, false)
	want("incremental without a session", ctx, code, kerr.ShareSessionNotFound)
	ctx, code = c.fetch(conn1, a, 0, []sharePartitionID{p(1, 0)}, nil, true)
	want("a new session with acknowledgements", ctx, code, kerr.InvalidRequest)
	ctx, code = c.fetch(conn1, a, 0, []sharePartitionID{p(1, 0), p(1, 1)}, nil, false)
	want("a new session", ctx, code, nil, p(1, 0), p(1, 1))
	ctx, code = c.fetch(conn1, a, 2, nil, nil, false)
	want("epoch 2 before 1", ctx, code, kerr.InvalidShareSessionEpoch)
	ctx, code = c.fetch(conn1, a, 1, []sharePartitionID{p(2, 0), p(1, 0)}, []sharePartitionID{p(1, 1)}, true)
	want("epoch 1 adds and forgets", ctx, code, nil, p(1, 0), p(2, 0))
	if _, _, code := c.acknowledge(a, 0); code != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("acknowledge at epoch 0: %v", kerr.ErrorForCode(code))
	}
	if _, _, code := c.acknowledge(a, 2); code != 0 {
		t.Fatalf("acknowledge at epoch 2: %v", kerr.ErrorForCode(code))
	}
	ctx, code = c.fetch(conn1, a, 2, nil, nil, false)
	want("a fetch at the epoch an acknowledge used", ctx, code, kerr.InvalidShareSessionEpoch)
	ctx, code = c.fetch(conn1, a, 3, nil, nil, false)
	want("epoch 3", ctx, code, nil, p(1, 0), p(2, 0))
	if s, n := c.stats(); s != 1 || n != 2 {
		t.Fatalf("stats %d sessions, %d partitions", s, n)
	}

	// The limit: two sessions; a third member is refused; a member
	// starting over replaces its own.
	b, d := shareSessionKey{"", "g", "b"}, shareSessionKey{"acme", "g", "a"}
	ctx, code = c.fetch(conn2, b, 0, []sharePartitionID{p(1, 0)}, nil, false)
	want("a second session", ctx, code, nil, p(1, 0))
	ctx, code = c.fetch(conn2, d, 0, nil, nil, false)
	want("a third session", ctx, code, kerr.ShareSessionLimitReached)
	ctx, code = c.fetch(conn2, b, 0, []sharePartitionID{p(3, 0)}, nil, false)
	want("a session started over", ctx, code, nil, p(3, 0))

	// -1 ends a session; then it is not found.
	ctx, code = c.fetch(conn2, b, -1, nil, nil, true)
	if code != 0 || !ctx.final {
		t.Fatalf("final epoch: %v, final %v", kerr.ErrorForCode(code), ctx.final)
	}
	if _, _, code := c.acknowledge(b, -1); code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("acknowledge after the session ended: %v", kerr.ErrorForCode(code))
	}
	// A ShareAcknowledge with -1 closes the session too, with its
	// partitions to release.
	ctx, code = c.fetch(conn2, b, 0, []sharePartitionID{p(4, 0)}, nil, false)
	want("a session again", ctx, code, nil, p(4, 0))
	if parts, closed, code := c.acknowledge(b, -1); code != 0 || !closed || !slices.Equal(parts, []sharePartitionID{p(4, 0)}) {
		t.Fatalf("acknowledge -1: %v %v %v", parts, closed, kerr.ErrorForCode(code))
	}

	// conn1 closes: a's session goes and a is released; conn2 had none
	// left.
	c.closed(conn1)
	c.closed(conn2)
	if s, n := c.stats(); s != 0 || n != 0 {
		t.Fatalf("after the connections closed: %d sessions, %d partitions", s, n)
	}
	if !slices.Equal(left, []shareSessionKey{a}) || !slices.Equal(leftParts[0], []sharePartitionID{p(1, 0), p(2, 0)}) {
		t.Fatalf("released members %v %v, want a with its partitions only (b ended its own)", left, leftParts)
	}
	if nextShareEpoch(1<<31-1) != 1 || nextShareEpoch(-1) != -1 {
		t.Fatal("epoch wrap")
	}
}
