package kafka_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// flakyListener fails its first n Accepts with err, as a listener whose
// process is out of file descriptors does.
type flakyListener struct {
	net.Listener
	n   atomic.Int32
	err error
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.n.Add(-1) >= 0 {
		return nil, l.err
	}
	return l.Listener.Accept()
}

// Accept errors (EMFILE when file descriptors run out, ECONNABORTED) are
// retried with a growing delay and logged at most WarnBurst times; the
// server keeps serving. Only its listener closed by someone else makes
// Serve return an error.
func TestAcceptErrorsAreRetried(t *testing.T) {
	_, logs, s := startKafka(t, kafka.Config{WarnBurst: 3, WarnInterval: time.Hour})
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED} {
		t.Run(errno.Error(), func(t *testing.T) {
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln := &flakyListener{Listener: inner, err: &net.OpError{Op: "accept", Net: "tcp", Err: &net.OpError{Op: "accept4", Err: errno}}}
			ln.n.Store(8) // 5+10+…+640 ms of back-off
			served := make(chan error, 1)
			go func() { served <- s.Serve(ln) }()
			c := dial(t, inner.Addr().String())
			c.expectOpen()
			select {
			case err := <-served:
				t.Fatalf("Serve returned %v after accept errors", err)
			default:
			}
			// Closed behind the server's back: Serve must say so.
			inner.Close()
			select {
			case err := <-served:
				if !errors.Is(err, net.ErrClosed) {
					t.Errorf("Serve on a listener closed by someone else returned %v, want net.ErrClosed", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Serve did not return after its listener was closed")
			}
		})
	}
	// 24 failed accepts, 3 lines (the burst); the rest are counted.
	if n := strings.Count(logs.String(), `msg="accept failed; retrying"`); n != 3 {
		t.Errorf("%d accept-error lines for 24 accept errors, want the burst of 3", n)
	}
}

// A flood of bad frames produces a bounded number of log lines: the
// burst, then one line that counts the rest.
func TestBadFrameFloodLogsBounded(t *testing.T) {
	addr, logs, s := startKafka(t, kafka.Config{WarnBurst: 5, WarnInterval: time.Hour})
	const flood = 500
	for range flood {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.Write([]byte{0xff, 0xff, 0xff, 0xff}) // size -1
		nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err == nil {
			t.Fatal("the server answered a bad frame")
		}
		nc.Close()
	}
	if n := strings.Count(logs.String(), "bad request size"); n != 5 {
		t.Errorf("%d lines for %d bad frames, want the burst of 5", n, flood)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.Shutdown(ctx)
	if !strings.Contains(logs.String(), `msg="repeated warning suppressed" warning="closing connection: bad request size" suppressed=495`) {
		t.Errorf("no line counts the 495 suppressed warnings:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 6 {
		t.Errorf("%d WARN lines, want 6", n)
	}
}

// Beyond MaxConnections a new connection is closed at once, with a log
// line; the open ones keep working, and a slot that frees is usable.
func TestMaxConnections(t *testing.T) {
	addr, logs, s := startKafka(t, kafka.Config{MaxConnections: 3})
	var cs []*rawClient
	for range 3 {
		c := dial(t, addr)
		c.expectOpen()
		cs = append(cs, c)
	}
	dial(t, addr).expectClosed(ioTimeout)
	if !strings.Contains(logs.String(), `"closing new connection: max connections reached" remote=127.0.0.1:`) {
		t.Errorf("no log line for the refused connection:\n%s", logs.String())
	}
	if st := s.Conns(); st.Open != 3 || st.RefusedMax != 1 || st.RefusedPerIP != 0 {
		t.Errorf("conn stats %+v, want 3 open and 1 refused by MaxConnections", st)
	}
	for _, c := range cs {
		c.expectOpen()
	}
	cs[0].nc.Close()
	testkit.Eventually(t, 30*time.Second, "the closed connection frees its slot", func() bool { return s.Conns().Open == 2 })
	dial(t, addr).expectOpen()
}

// MaxConnectionsPerIP: the 6th connection from one address is closed at
// once; its first five and other addresses are unaffected.
func TestMaxConnectionsPerIP(t *testing.T) {
	addr, logs, s := startKafka(t, kafka.Config{MaxConnectionsPerIP: 5})
	var cs []*rawClient
	for range 5 {
		c := dial(t, addr)
		c.expectOpen()
		cs = append(cs, c)
	}
	dial(t, addr).expectClosed(ioTimeout)
	if !strings.Contains(logs.String(), `"closing new connection: max connections per IP reached" remote=127.0.0.1:`) {
		t.Errorf("no log line for the refused connection:\n%s", logs.String())
	}
	if st := s.Conns(); st.RefusedPerIP != 1 || st.RefusedMax != 0 {
		t.Errorf("conn stats %+v, want 1 refused by MaxConnectionsPerIP", st)
	}
	for _, c := range cs {
		c.expectOpen()
	}
	// Another loopback address has its own count.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: ioTimeout}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from 127.0.0.2: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	other := &rawClient{t: t, nc: nc, br: bufio.NewReader(nc), f: kmsg.NewRequestFormatter()}
	other.expectOpen()
}

// ConnectionsMaxIdle closes a connection that is idle, but not one whose
// request is still in flight (a long poll longer than the idle time).
func TestConnectionsMaxIdle(t *testing.T) {
	addr, _ := startServer(t, kafka.Config{ConnectionsMaxIdle: 300 * time.Millisecond})
	setup := dial(t, addr)
	id := createTopic(setup, "idle", 1, nil)

	idle := dial(t, addr)
	idle.expectClosed(ioTimeout)

	// A 2 s long poll outlives the idle time; its answer still comes.
	c := dial(t, addr)
	req := at(12, fetchReq("idle", id, 0, 0, 2000, 1))
	if r := c.recv(req, c.send(req)).(*kmsg.FetchResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("long poll: error %s", codeName(r.Topics[0].Partitions[0].ErrorCode))
	}
	c.expectOpen()
	c.expectClosed(ioTimeout) // idle again after its last answer

	// A connection busy for over three idle times stays open: the reader
	// keeps a deadline a little earlier than the idle one rather than
	// setting it per request, and when that one passes it finds the
	// activity and waits again.
	busy := dial(t, addr)
	for start := time.Now(); time.Since(start) < time.Second; {
		req := at(0, kmsg.NewPtrApiVersionsRequest())
		if r := busy.recv(req, busy.send(req)).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
			t.Fatalf("busy connection: error %s", codeName(r.ErrorCode))
		}
		time.Sleep(20 * time.Millisecond)
	}
	busy.expectClosed(ioTimeout)
}

// A client that declares a 100 MiB frame and trickles it is cut off after
// RequestReadTimeout, and gives its bytes back.
func TestTrickledFrame(t *testing.T) {
	addr, logs, s := startKafka(t, kafka.Config{RequestReadTimeout: 500 * time.Millisecond, QueuedMaxRequestBytes: 200 << 20})
	c := dial(t, addr)
	c.write(binary.BigEndian.AppendUint32(nil, 100<<20))
	c.write([]byte{0, 18, 0, 0})
	c.expectClosed(ioTimeout)
	if !strings.Contains(logs.String(), `"closing connection: request frame not complete in time" remote=127.0.0.1:`) || !strings.Contains(logs.String(), "size=104857600 received=4 timeout=500ms") {
		t.Errorf("no log line for the trickled frame:\n%s", logs.String())
	}
	testkit.Eventually(t, 30*time.Second, "the frame's bytes are given back", func() bool { return s.BudgetFree() == 200<<20 })
	dial(t, addr).expectOpen()
}

// QueuedMaxRequestBytes: while a started frame holds the whole budget,
// another connection's request waits (it is not even allocated) and is
// answered once the frame completes.
func TestQueuedMaxRequestBytes(t *testing.T) {
	const budget = 1 << 20
	addr, _, s := startKafka(t, kafka.Config{MaxRequestBytes: budget, QueuedMaxRequestBytes: budget})
	// A valid ApiVersions request padded to the whole budget (the padding
	// is a tagged-field-free trailer kmsg ignores at v0).
	big := requestBytes(0, kmsg.NewPtrApiVersionsRequest())
	big = append(big, make([]byte, budget-len(big))...)
	holder := dial(t, addr)
	holder.write(binary.BigEndian.AppendUint32(nil, uint32(len(big))))
	holder.write(big[:1000])
	testkit.Eventually(t, 30*time.Second, "the started frame takes the budget", func() bool { return s.BudgetFree() == 0 })

	waiter := dial(t, addr)
	req := at(0, kmsg.NewPtrApiVersionsRequest())
	corr := waiter.send(req)
	// No answer can come while the budget is held, however long this waits.
	if _, _, err := waiter.readFrame(300 * time.Millisecond); err == nil {
		t.Fatal("a request was read while the budget was used up")
	}
	holder.write(big[1000:])
	if _, _, err := holder.readFrame(ioTimeout); err != nil {
		t.Fatalf("the big request: %v", err)
	}
	// readFrame's deadline error leaves the client usable.
	if r := waiter.recv(req, corr).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatalf("the waiting request: error %s", codeName(r.ErrorCode))
	}
	testkit.Eventually(t, 30*time.Second, "the budget is free again", func() bool { return s.BudgetFree() == budget })
}

// A client that pipelines requests and never reads the answers is cut
// off after ResponseWriteTimeout, which gives their bytes back.
func TestResponseWriteTimeout(t *testing.T) {
	addr, logs, s := startKafka(t, kafka.Config{ResponseWriteTimeout: 300 * time.Millisecond, QueuedMaxRequestBytes: 200 << 20})
	setup := dial(t, addr)
	id := createTopic(setup, "big", 1, nil)
	for range 4 {
		mustProduce(setup, "big", 0, plain(1, 900<<10).encode())
	}
	c := dial(t, addr)
	var wire bytes.Buffer
	for range 200 {
		req := at(12, fetchReq("big", id, 0, 0, 0, 1))
		b, _ := c.frame(req)
		wire.Write(b)
	}
	c.write(wire.Bytes())
	testkit.Eventually(t, 60*time.Second, "the connection that does not read is closed", func() bool {
		return strings.Contains(logs.String(), `"closing connection: client is not reading its responses" remote=127.0.0.1:`)
	})
	testkit.Eventually(t, 30*time.Second, "its bytes are given back", func() bool { return s.BudgetFree() == 200<<20 })
	setup.expectOpen()
}
