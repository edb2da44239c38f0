package e2e

// Floods and abuse against the real binary: what a production server
// meets on its first day. Each test can fail: the server exiting, a
// legitimate client that stops working, or memory or log lines that grow
// with the flood.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// floodEnv, set to a host:port, makes the test binary a flood helper
// (see TestMain): the test process keeps its own file descriptors for its
// clients, and each helper has an open-file limit of its own.
const (
	floodEnv      = "COHORT_E2E_FLOOD_ADDR"
	floodCountEnv = "COHORT_E2E_FLOOD_COUNT"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(floodEnv); addr != "" {
		n, err := strconv.Atoi(os.Getenv(floodCountEnv))
		if err != nil {
			fmt.Fprintln(os.Stderr, "flood helper: bad count:", err)
			os.Exit(2)
		}
		floodHelper(addr, n)
		os.Exit(0)
	}
	code := m.Run()
	testkit.RemoveBuilds()
	os.Exit(code)
}

// floodHelper opens n idle connections to addr, reports on stdout how
// many it opened and how many of them the server closed at once, and
// holds them until stdin closes.
func floodHelper(addr string, n int) {
	conns := make([]net.Conn, n)
	var mu sync.Mutex
	failed := map[string]int{} // dial error → count
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	for range 64 {
		wg.Go(func() {
			for i := range next {
				c, err := net.DialTimeout("tcp", addr, 30*time.Second)
				if err != nil {
					mu.Lock()
					failed[err.Error()]++
					mu.Unlock()
					continue
				}
				conns[i] = c
			}
		})
	}
	wg.Wait()
	// A connection the server refused is closed (EOF or reset) by now;
	// one it holds, or has not accepted yet, times out.
	var open, closed, dialed int
	deadline := time.Now().Add(3 * time.Second)
	for _, c := range conns {
		if c == nil {
			continue
		}
		dialed++
		c.SetReadDeadline(deadline)
		wg.Go(func() {
			_, err := c.Read(make([]byte, 1))
			var ne net.Error
			mu.Lock()
			if errors.As(err, &ne) && ne.Timeout() {
				open++
			} else {
				closed++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	fails := 0
	for e, n := range failed {
		fails += n
		fmt.Fprintf(os.Stderr, "flood helper: %d dials failed: %s\n", n, e)
	}
	fmt.Printf("dialed=%d failed=%d open=%d closed=%d\n", dialed, fails, open, closed)
	io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// flood is a running flood helper.
type flood struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	line  chan string
}

func startFlood(t *testing.T, addr string, n int) *flood {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floodEnv+"="+addr, floodCountEnv+"="+strconv.Itoa(n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f := &flood{cmd: cmd, stdin: stdin, line: make(chan string, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			f.line <- sc.Text()
		}
		close(f.line)
		io.Copy(io.Discard, stdout)
	}()
	t.Cleanup(f.stop)
	return f
}

// report waits for the helper's line: dialed=… failed=… open=… closed=….
func (f *flood) report(t *testing.T) map[string]int {
	t.Helper()
	select {
	case l, ok := <-f.line:
		if !ok {
			t.Fatal("the flood helper exited without reporting")
		}
		m := map[string]int{}
		for _, kv := range strings.Fields(l) {
			k, v, _ := strings.Cut(kv, "=")
			m[k], _ = strconv.Atoi(v)
		}
		return m
	case <-time.After(5 * time.Minute):
		t.Fatal("the flood helper did not report within 5 minutes")
		return nil
	}
}

// stop closes the helper's connections and waits for it.
func (f *flood) stop() {
	if f.stdin != nil {
		f.stdin.Close()
		f.stdin = nil
		f.cmd.Wait()
	}
}

// procStatus reads a field of /proc/PID/status, in KiB for sizes.
func procStatus(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + field + `:\s+(\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no %s in /proc/%d/status", field, pid)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

func openFDs(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// groupClient is a franz-go client that produces to topic and consumes
// it in group, committing what it consumed.
type groupClient struct {
	t            *testing.T
	cl           *kgo.Client
	adm          *kadm.Client
	topic, group string
	seen         map[string]bool
}

func newGroupClient(t *testing.T, addr, topic, group string) *groupClient {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &groupClient{t: t, cl: cl, adm: kadm.NewClient(cl), topic: topic, group: group, seen: map[string]bool{}}
}

// round produces n records, consumes them in the group, commits, and
// checks that the group's committed offset is the end of the log.
func (g *groupClient) round(what string, n int) {
	t := g.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	want := map[string]bool{}
	for i := range n {
		v := fmt.Sprintf("%s-%d", what, i)
		want[v] = true
		if err := g.cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", what, err)
		}
	}
	for missing := len(want); missing > 0; {
		fs := g.cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s: %d records not consumed: %v", what, missing, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("%s: fetch %s/%d: %v", what, topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if want[string(r.Value)] && !g.seen[string(r.Value)] {
				missing--
			}
			g.seen[string(r.Value)] = true
		})
	}
	if err := g.cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("%s: commit: %v", what, err)
	}
	ends, err := g.adm.ListEndOffsets(ctx, g.topic)
	if err != nil {
		t.Fatalf("%s: end offsets: %v", what, err)
	}
	offs, err := g.adm.FetchOffsets(ctx, g.group)
	if err != nil || offs.Error() != nil {
		t.Fatalf("%s: fetch offsets: %v %v", what, err, offs.Error())
	}
	ends.Each(func(e kadm.ListedOffset) {
		if o, ok := offs.Lookup(e.Topic, e.Partition); !ok || o.At != e.Offset {
			t.Errorf("%s: group %s committed %+v on %s/%d, want the end %d", what, g.group, o.At, e.Topic, e.Partition, e.Offset)
		}
	})
}

// TestFloodOfIdleConnections opens 20,000 idle connections, the open-file
// limit here, from two helper processes, while a franz-go client that
// connected before keeps producing, consuming and committing in a group.
// The server must not exit, must log the flood a bounded number of times,
// and must serve a new client once the flood's connections close.
func TestFloodOfIdleConnections(t *testing.T) {
	longTest(t)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 20000 {
		t.Skipf("needs an open-file limit of 20,000 (have %d)", lim.Cur)
	}
	for _, tc := range []struct {
		what string
		args []string
		// warning is the line the flood causes; accept errors need the
		// server's limit set above the open-file limit.
		warning string
		// counted: more warnings than the burst, so a line counts the
		// rest. (Accept errors are retried 5 ms, 10 ms … 1 s apart: how
		// many the flood causes depends on how long it lasts.)
		counted bool
	}{
		{"default limits", nil, "closing new connection: max connections reached", true},
		{"max-connections above the open-file limit", []string{"--max-connections", "1000000"}, "accept failed; retrying", false},
	} {
		t.Run(tc.what, func(t *testing.T) {
			start := time.Now()
			// Two one-member groups form in each run: the default 3 s
			// initial rebalance delay, for members that never come,
			// was 12 s of this test's waiting and no part of it.
			args := append([]string{"--group-initial-rebalance-delay", "100ms"}, tc.args...)
			p := testkit.StartBinary(t, t.TempDir(), args...)
			pid := p.Pid()
			before := newGroupClient(t, p.Addr, "flood", "before")
			before.round("before the flood", 20)
			fd0, rss0 := openFDs(t, pid), procStatus(t, pid, "VmRSS")

			const perHelper = 10000
			floodStart := time.Now()
			fl := []*flood{startFlood(t, p.Addr, perHelper), startFlood(t, p.Addr, perHelper)}
			var dialed, failed, open, closed int
			for _, f := range fl {
				r := f.report(t)
				dialed, failed, open, closed = dialed+r["dialed"], failed+r["failed"], open+r["open"], closed+r["closed"]
			}
			floodTook := time.Since(floodStart)
			fd1, rss1 := openFDs(t, pid), procStatus(t, pid, "VmRSS")
			t.Logf("flood of %d: %d dialed (%d failed to dial), %d still open, %d closed by the server; server fds %d → %d, so %d held; VmRSS %d → %d KiB; %v",
				2*perHelper, dialed, failed, open, closed, fd0, fd1, fd1-fd0, rss0, rss1, floodTook.Round(time.Millisecond))
			if p.Exited() {
				t.Fatalf("the server exited during the flood:\n%s", p.Log())
			}
			before.round("during the flood", 20)

			// The flood's warnings are rate-limited: at most 10 lines per
			// 10 s, then a count.
			lines := strings.Count(p.Log(), `msg="`+tc.warning+`"`)
			bound := 10 * (int(time.Since(floodStart)/(10*time.Second)) + 2)
			t.Logf("%d %q lines during the flood (bound %d)", lines, tc.warning, bound)
			if lines == 0 || lines > bound {
				t.Errorf("%d %q lines, want between 1 and %d", lines, tc.warning, bound)
			}

			for _, f := range fl {
				f.stop()
			}
			testkit.Eventually(t, 2*time.Minute, "the server lets go of the flood's connections", func() bool {
				return openFDs(t, pid) <= fd0+10
			})
			after := newGroupClient(t, p.Addr, "flood", "after")
			after.round("after the flood", 20)
			before.round("after the flood, old client", 5)
			if tc.counted {
				testkit.Eventually(t, time.Minute, "the suppressed warnings are counted", func() bool {
					return strings.Contains(p.Log(), `msg="repeated warning suppressed" warning="`+tc.warning+`"`)
				})
			}
			if p.Exited() {
				t.Fatalf("the server exited:\n%s", p.Log())
			}
			total := strings.Count(p.Log(), "\n")
			t.Logf("server log: %d lines in all; %d warnings of the kind; VmRSS after %d KiB; test took %v\n%s",
				total, strings.Count(p.Log(), `"`+tc.warning+`"`), procStatus(t, pid, "VmRSS"), time.Since(start).Round(time.Millisecond), p.Log())
		})
	}
}

// rawConn is a bare Kafka connection: requests framed by kmsg, responses
// read back one frame at a time.
type rawConn struct {
	t    *testing.T
	nc   net.Conn
	br   *bufio.Reader
	f    *kmsg.RequestFormatter
	corr int32
}

func rawDial(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReaderSize(nc, 1<<20), f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("e2e-raw"))}
}

func (c *rawConn) frame(req kmsg.Request) []byte {
	c.corr++
	return c.f.AppendRequest(nil, req, c.corr)
}

// read reads one response to req (its version set).
func (c *rawConn) read(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body := buf[4:]
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		body = body[1:] // the server sends no header tags
	}
	return resp, resp.ReadFrom(body)
}

// apiVersions checks that the connection answers a request.
func (c *rawConn) apiVersions() error {
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := c.nc.Write(c.frame(req)); err != nil {
		return err
	}
	resp, err := c.read(req, 30*time.Second)
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
		return kerr.ErrorForCode(code)
	}
	return nil
}

// expectClosed waits for the server to close the connection.
func (c *rawConn) expectClosed(what string) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(time.Minute))
	n, err := c.br.Read(make([]byte, 1))
	if n > 0 || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		c.t.Fatalf("%s: want the server to close the connection, got %d bytes, %v", what, n, err)
	}
}

// TestIdleConnectionsClosed: with --connections-max-idle 1s, a connection
// that never sends anything, and one that goes quiet after a request,
// are closed by the server.
func TestIdleConnectionsClosed(t *testing.T) {
	p := testkit.StartBinary(t, t.TempDir(), "--connections-max-idle", "1s")
	silent := rawDial(t, p.Addr)
	used := rawDial(t, p.Addr)
	if err := used.apiVersions(); err != nil {
		t.Fatal(err)
	}
	silent.expectClosed("a connection that never sent a request")
	used.expectClosed("a connection idle after its request")
	rawDial(t, p.Addr).apiVersions()
}

// TestMaxConnectionsPerIP: with --max-connections-per-ip 5 the sixth
// connection from 127.0.0.1 is closed by the server; the first five
// still work.
func TestMaxConnectionsPerIP(t *testing.T) {
	p := testkit.StartBinary(t, t.TempDir(), "--max-connections-per-ip", "5")
	var cs []*rawConn
	for i := range 5 {
		c := rawDial(t, p.Addr)
		if err := c.apiVersions(); err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		cs = append(cs, c)
	}
	rawDial(t, p.Addr).expectClosed("the sixth connection")
	for i, c := range cs {
		if err := c.apiVersions(); err != nil {
			t.Errorf("connection %d after the sixth was refused: %v", i+1, err)
		}
	}
	// The line reaches us through the process's stderr pipe, after the
	// close may have: wait for it.
	testkit.Eventually(t, 10*time.Second, "no log line for the refused connection", func() bool {
		return strings.Contains(p.Log(), `msg="closing new connection: max connections per IP reached" remote=127.0.0.1:`)
	})
}

// TestTrickledFrame: a client that declares a 100 MiB frame and sends a
// few bytes slowly is cut off after --request-read-timeout.
func TestTrickledFrame(t *testing.T) {
	p := testkit.StartBinary(t, t.TempDir(), "--request-read-timeout", "2s")
	rss0 := procStatus(t, p.Pid(), "VmRSS")
	c := rawDial(t, p.Addr)
	c.nc.Write(binary.BigEndian.AppendUint32(nil, 100<<20))
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		c.expectClosed("a trickled 100 MiB frame")
	}()
	// One byte every 100 ms, until the server hangs up (bounded).
trickle:
	for i := range 600 {
		select {
		case <-closed:
			break trickle
		case <-time.After(100 * time.Millisecond):
		}
		if _, err := c.nc.Write([]byte{byte(i)}); err != nil {
			break
		}
	}
	<-closed
	testkit.Eventually(t, 10*time.Second, "no log line for the trickled frame", func() bool {
		return strings.Contains(p.Log(), `msg="closing connection: request frame not complete in time" remote=127.0.0.1:`) && strings.Contains(p.Log(), "size=104857600")
	})
	t.Logf("VmRSS %d → %d KiB (VmHWM %d KiB)", rss0, procStatus(t, p.Pid(), "VmRSS"), procStatus(t, p.Pid(), "VmHWM"))
	rawDial(t, p.Addr).apiVersions()
}

// TestQueuedRequestBytesBoundMemory: ten connections each declare a
// 32 MiB frame and send 24 MiB of it. With --queued-max-request-bytes
// 32 MiB only one frame is allocated at a time, so the server's peak RSS
// grows by about one frame; before the bound it grew by all ten (240 MiB).
func TestQueuedRequestBytesBoundMemory(t *testing.T) {
	const frame, sent, conns = 32 << 20, 24 << 20, 10
	noHeapFloor(t)
	p := testkit.StartBinary(t, t.TempDir(), "--max-request-bytes", strconv.Itoa(frame), "--queued-max-request-bytes", strconv.Itoa(frame))
	pid := p.Pid()
	rss0, hwm0 := procStatus(t, pid, "VmRSS"), procStatus(t, pid, "VmHWM")
	var wg sync.WaitGroup
	var mu sync.Mutex
	wrote := make([]int, conns)
	payload := make([]byte, sent)
	for i := range conns {
		c := rawDial(t, p.Addr)
		wg.Go(func() {
			// Writes to a connection the server does not read block once
			// the socket buffers are full: the deadline ends them.
			c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			c.nc.Write(binary.BigEndian.AppendUint32(nil, frame))
			n, _ := c.nc.Write(payload)
			mu.Lock()
			wrote[i] = n
			mu.Unlock()
		})
	}
	wg.Wait()
	rss1, hwm1 := procStatus(t, pid, "VmRSS"), procStatus(t, pid, "VmHWM")
	t.Logf("bytes written per connection (the rest blocked): %v; VmRSS %d → %d KiB, VmHWM %d → %d KiB (+%d MiB; one frame is %d MiB, all ten %d MiB)",
		wrote, rss0, rss1, hwm0, hwm1, (hwm1-rss0)>>10, frame>>20, conns*sent>>20)
	if grew := (hwm1 - rss0) << 10; grew > 3*frame {
		t.Errorf("peak RSS grew by %d MiB, more than 3 frames (%d MiB): the bound did not hold", grew>>20, 3*frame>>20)
	}
	if p.Exited() {
		t.Fatalf("the server exited:\n%s", p.Log())
	}
}

// noHeapFloor makes the servers the test starts collect garbage as Go
// does by default (GOGC=100 in their environment). `cohort serve` lets its
// heap reach 256 MiB before it collects (cmd/cohort/gcfloor.go), a fixed
// allowance of garbage; the memory tests measure what the server keeps,
// which that allowance would hide under up to 256 MiB of dead objects.
func noHeapFloor(t *testing.T) {
	t.Setenv("GOGC", "100")
}

// TestPendingMemberFlood: one connection pipelines 1,000,000 JoinGroup v9
// requests with no member id into one group, as fast as it can. The server
// hands out at most --group-max-pending-members (10,000) ids and answers
// the rest GROUP_MAX_SIZE_REACHED; before the cap, each made an id that
// lived for the session timeout (1,000,000 took ~595 MiB).
func TestPendingMemberFlood(t *testing.T) {
	const requests, pendingCap = 1000000, 10000
	noHeapFloor(t)
	p := testkit.StartBinary(t, t.TempDir())
	pid := p.Pid()
	c := rawDial(t, p.Addr)
	if err := c.apiVersions(); err != nil {
		t.Fatal(err)
	}
	rss0 := procStatus(t, pid, "VmRSS")
	join := func() *kmsg.JoinGroupRequest {
		r := kmsg.NewPtrJoinGroupRequest()
		r.Version = 9
		r.Group, r.ProtocolType = "flood", "consumer"
		// The longest session Cohort allows: no id expires during the
		// test, so every id handed out is still pending at its end.
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = int32((30 * time.Minute).Milliseconds()), 60000
		r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0}}}
		return r
	}
	req := join()
	start := time.Now()
	writeErr := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(c.nc, 1<<20)
		c.nc.SetWriteDeadline(time.Now().Add(5 * time.Minute))
		for range requests {
			if _, err := bw.Write(c.frame(req)); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- bw.Flush()
	}()
	ids := map[string]bool{}
	codes := map[int16]int{}
	for i := range requests {
		resp, err := c.read(req, time.Minute)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		r := resp.(*kmsg.JoinGroupResponse)
		codes[r.ErrorCode]++
		if r.ErrorCode == kerr.MemberIDRequired.Code {
			ids[r.MemberID] = true
		}
	}
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	rss1, hwm := procStatus(t, pid, "VmRSS"), procStatus(t, pid, "VmHWM")
	t.Logf("%d JoinGroups in %v (%.0f/s): %d distinct ids, codes %v; VmRSS %d → %d KiB (+%d MiB), VmHWM %d KiB",
		requests, took.Round(time.Millisecond), requests/took.Seconds(), len(ids), codes, rss0, rss1, (rss1-rss0)>>10, hwm)
	if len(ids) > pendingCap {
		t.Errorf("%d distinct pending ids handed out, want at most %d", len(ids), pendingCap)
	}
	if codes[kerr.MemberIDRequired.Code]+codes[kerr.GroupMaxSizeReached.Code] != requests {
		t.Errorf("codes %v: want only MEMBER_ID_REQUIRED and GROUP_MAX_SIZE_REACHED", codes)
	}
	if grew := (rss1 - rss0) >> 10; grew > 200 {
		t.Errorf("RSS grew by %d MiB, more than 200 MiB", grew)
	}
	// The server still serves groups. (The flooded group itself turns
	// new members away until its pending ids expire: the price of the
	// cap, paid by that group instead of the server's memory.)
	g := newGroupClient(t, p.Addr, "after-flood", "other")
	g.round("after the pending-member flood", 5)
}
