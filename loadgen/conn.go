package loadgen

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The protocol versions the raw clients speak (JoinGroup v9 and
// SyncGroup v5 are the newest; all are flexible versions).
const (
	JoinVersion      = 9
	SyncVersion      = 5
	HeartbeatVersion = 4
	LeaveVersion     = 5
	CommitVersion    = 8
	FetchVersion     = 8
)

// IOTimeout bounds every read and write of a Conn, so that a broker that
// never answers fails the run instead of hanging it. It is above the 60 s
// rebalance timeout, the longest a JoinGroup may be held.
const IOTimeout = 90 * time.Second

// Conn is one TCP connection speaking the Kafka protocol with kmsg
// bodies. It is not safe for concurrent use: one goroutine owns it.
type Conn struct {
	nc    net.Conn
	br    *bufio.Reader
	f     *kmsg.RequestFormatter
	corr  int32
	frame []byte // the request being encoded
	wbuf  []byte // encoded requests not yet written
}

// Dial connects to addr; clientID goes in every request header.
func Dial(addr, clientID string) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, IOTimeout)
	if err != nil {
		return nil, err
	}
	return &Conn{
		nc: nc,
		br: bufio.NewReaderSize(nc, 16<<10),
		f:  kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
	}, nil
}

// DialN opens n connections to addr, or none.
func DialN(addr string, n int, clientID string) ([]*Conn, error) {
	conns := make([]*Conn, 0, n)
	for i := range n {
		c, err := Dial(addr, clientID)
		if err != nil {
			CloseAll(conns)
			return nil, fmt.Errorf("dial %s (connection %d of %d): %w", addr, i+1, n, err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// Close closes the connection, which ends any read or write on it.
func (c *Conn) Close() error { return c.nc.Close() }

// CloseAll closes every connection that is not nil.
func CloseAll(conns []*Conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// Append adds req, framed with the next correlation id, to the write
// buffer and returns that id. req's version must be set.
func (c *Conn) Append(req kmsg.Request) int32 {
	c.corr++
	// AppendRequest writes the frame's size at the start of the slice it
	// is given, so each frame is encoded on its own before it is queued.
	c.frame = c.f.AppendRequest(c.frame[:0], req, c.corr)
	c.wbuf = append(c.wbuf, c.frame...)
	return c.corr
}

// Flush writes the buffered requests.
func (c *Conn) Flush() error {
	c.nc.SetWriteDeadline(time.Now().Add(IOTimeout))
	_, err := c.nc.Write(c.wbuf)
	c.wbuf = c.wbuf[:0]
	return err
}

// Recv reads the next response frame, which must answer req (sent with
// correlation id corr), and decodes it at req's version.
func (c *Conn) Recv(req kmsg.Request, corr int32) (kmsg.Response, error) {
	name := kmsg.NameForKey(req.Key())
	c.nc.SetReadDeadline(time.Now().Add(IOTimeout))
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return nil, fmt.Errorf("%s v%d: reading the response: %w", name, req.GetVersion(), err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("%s v%d: response size %d", name, req.GetVersion(), n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return nil, fmt.Errorf("%s v%d: reading the response: %w", name, req.GetVersion(), err)
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != corr {
		return nil, fmt.Errorf("%s v%d: response correlation id %d, want %d", name, req.GetVersion(), got, corr)
	}
	body := buf[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	// A flexible response header has a tag section (ApiVersions' never).
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		if len(body) == 0 || body[0] != 0 {
			return nil, fmt.Errorf("%s v%d: bad response header tag section", name, req.GetVersion())
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%s v%d: response does not decode: %w", name, req.GetVersion(), err)
	}
	return resp, nil
}

// answerBuffered says whether a whole response frame is already read
// from the socket.
func (c *Conn) answerBuffered() bool {
	n := c.br.Buffered()
	if n < 4 {
		return false
	}
	size, err := c.br.Peek(4)
	return err == nil && n-4 >= int(binary.BigEndian.Uint32(size))
}

// Do sends req at version v on c and reads its response.
func Do[R kmsg.Response](c *Conn, v int16, req kmsg.Request) (R, error) {
	var zero R
	req.SetVersion(v)
	corr := c.Append(req)
	if err := c.Flush(); err != nil {
		return zero, fmt.Errorf("%s: write: %w", kmsg.NameForKey(req.Key()), err)
	}
	resp, err := c.Recv(req, corr)
	if err != nil {
		return zero, err
	}
	r, ok := resp.(R)
	if !ok {
		return zero, fmt.Errorf("%s: unexpected response type %T", kmsg.NameForKey(req.Key()), resp)
	}
	return r, nil
}

// Pipelined sends one request per item on c (built by req, its version
// set), with up to depth in flight, and checks each answer with check,
// which is also given the time from the flush that sent the request to
// its answer. Answers already read from the socket are taken before the
// freed places are filled again, in one write, as a client that batches
// its sends does: refilling after every answer cost a write system call
// per request, and made the load generator, which shares the cores with
// the broker it measures, the limit of the heartbeat benchmarks.
func Pipelined[T any](c *Conn, items []T, depth int, req func(T) kmsg.Request, check func(T, kmsg.Response, time.Duration) error) error {
	type sent struct {
		item T
		req  kmsg.Request
		corr int32
		at   time.Time
	}
	queue := make([]sent, 0, depth)
	next := 0
	for next < len(items) || len(queue) > 0 {
		if next < len(items) && len(queue) < depth && (len(queue) == 0 || !c.answerBuffered()) {
			first := len(queue)
			for next < len(items) && len(queue) < depth {
				r := req(items[next])
				queue = append(queue, sent{item: items[next], req: r, corr: c.Append(r)})
				next++
			}
			now := time.Now()
			for i := first; i < len(queue); i++ {
				queue[i].at = now
			}
			if err := c.Flush(); err != nil {
				return fmt.Errorf("%s: write: %w", kmsg.NameForKey(queue[0].req.Key()), err)
			}
		}
		s := queue[0]
		queue = queue[1:]
		resp, err := c.Recv(s.req, s.corr)
		if err != nil {
			return err
		}
		if err := check(s.item, resp, time.Since(s.at)); err != nil {
			return err
		}
	}
	return nil
}

// Parallel runs f(0..n-1) on up to workers goroutines and returns the
// first error; after one, no further f starts.
func Parallel(n, workers int, f func(i int) error) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range min(n, workers) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := f(i); err != nil {
					errOnce.Do(func() { firstErr = err })
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// Every returns xs[i], xs[i+n], xs[i+2n], …: connection i's share of
// the items when n connections serve them.
func Every[T any](xs []T, i, n int) []T {
	var out []T
	for ; i < len(xs); i += n {
		out = append(out, xs[i])
	}
	return out
}

// Percentile returns the q-quantile (0..1) of sorted, 0 if it is empty.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// CreateTopics creates each topic with the given number of partitions
// (replication factor 1) through seeds; a topic that already exists is
// not an error, so that runs can repeat against one broker.
func CreateTopics(ctx context.Context, seeds []string, partitions int32, names ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return fmt.Errorf("new client: %w", err)
	}
	defer cl.Close()
	resps, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, 1, nil, names...)
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	for _, r := range resps.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}
