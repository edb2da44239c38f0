package kafka

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reqHeader is a decoded request header (v1, or v2 for flexible versions).
type reqHeader struct {
	key      int16
	version  int16
	corr     int32
	clientID string
	// host is the client's IP address as Kafka reports it (Java's
	// InetAddress.toString(): "/127.0.0.1").
	host string
	// closeAfter is set by a handler to close the connection after this
	// request (an acks=0 produce that failed: Kafka's only way to tell).
	closeAfter bool
}

// pending is a request whose response is still to be written. respond runs
// on the writer, in request order; nil means the request gets no response
// (a produce with acks=0).
type pending struct {
	hdr     reqHeader
	respond func() kmsg.Response
	// raw, when set, is an already encoded response body (used for the
	// UNSUPPORTED_VERSION answer to ApiVersions, always in v0 format).
	raw []byte
	// closeAfter closes the connection once this response is written (or
	// instead of writing it, with respond nil): how Kafka signals an error
	// to an acks=0 producer.
	closeAfter bool
}

type conn struct {
	s      *Server
	nc     net.Conn
	remote string
	host   string // "/" and the peer's IP, as DescribeGroups shows it
	queue  chan pending
	logger *slog.Logger
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{
		s:      s,
		nc:     nc,
		remote: nc.RemoteAddr().String(),
		host:   peerHost(nc.RemoteAddr()),
		queue:  make(chan pending, s.cfg.MaxInflight),
		logger: s.logger.With("remote", nc.RemoteAddr().String()),
	}
}

// stopReading makes the reader's next (or current) read fail, so it stops
// taking requests; what was read is still answered.
func (c *conn) stopReading() { c.nc.SetReadDeadline(time.Unix(1, 0)) }

func (c *conn) serve() {
	defer c.s.connDone(c)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.write()
	}()
	c.read()
	close(c.queue)
	<-writerDone
	c.nc.Close()
}

// read decodes frames and dispatches them until the connection ends or a
// frame is bad. Each request's ordered part runs here, one at a time.
func (c *conn) read() {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	var sizeBuf [4]byte
	for {
		if _, err := io.ReadFull(br, sizeBuf[:]); err != nil {
			c.readEnded(err)
			return
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if size < 8 || size > c.s.cfg.MaxRequestBytes {
			c.logger.Warn("closing connection: bad request size", "size", size, "max", c.s.cfg.MaxRequestBytes)
			return
		}
		frame := make([]byte, size)
		if _, err := io.ReadFull(br, frame); err != nil {
			c.readEnded(err)
			return
		}
		p, err := c.s.decode(frame, c.host)
		if err != nil {
			c.logger.Warn("closing connection: bad request", "err", err)
			return
		}
		if !c.enqueue(p) {
			return
		}
	}
}

func (c *conn) readEnded(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
		return
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return // Shutdown
	}
	c.logger.Debug("read failed", "err", err)
}

func (c *conn) enqueue(p pending) bool {
	c.queue <- p
	return !p.closeAfter
}

// errBadFrame marks a frame that closes the connection.
var errBadFrame = errors.New("bad frame")

// decode parses one frame and runs the request's ordered part. A panic in a
// handler is a bug; it closes only this connection.
func (s *Server) decode(frame []byte, host string) (p pending, err error) {
	hdr, body, err := parseHeader(frame)
	if err != nil {
		return p, err
	}
	hdr.host = host
	p.hdr = hdr
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("handler panicked; closing connection", "api_key", hdr.key, "version", hdr.version, "panic", r, "stack", string(debug.Stack()))
			p, err = pending{}, fmt.Errorf("%w: handler panicked", errBadFrame)
		}
	}()

	h, ok := handlers[hdr.key]
	if !ok || hdr.version < h.min || hdr.version > h.max {
		if hdr.key == kmsg.ApiVersions.Int16() {
			// Kafka's rule: answer an ApiVersions we cannot parse with
			// UNSUPPORTED_VERSION in v0 format, so the client can retry
			// with a version from the list.
			p.raw = apiVersionsV0(kerr.UnsupportedVersion.Code)
			return p, nil
		}
		// Kafka closes the connection on any other API or version it does
		// not serve (InvalidRequestException in its socket server).
		return p, fmt.Errorf("%w: unsupported api key %d version %d", errBadFrame, hdr.key, hdr.version)
	}
	req := kmsg.RequestForKey(hdr.key)
	req.SetVersion(hdr.version)
	if req.IsFlexible() {
		if body, err = skipTags(body); err != nil {
			return p, err
		}
	}
	if err := req.ReadFrom(body); err != nil {
		return p, fmt.Errorf("%w: decode %s v%d: %v", errBadFrame, kmsg.NameForKey(hdr.key), hdr.version, err)
	}
	p.respond = h.fn(s, &hdr, req)
	p.closeAfter = hdr.closeAfter
	return p, nil
}

// parseHeader reads the request header up to the client id; the tagged
// fields of a v2 header are skipped by decode once the version is known.
func parseHeader(frame []byte) (reqHeader, []byte, error) {
	var h reqHeader
	if len(frame) < 10 {
		return h, nil, fmt.Errorf("%w: short header", errBadFrame)
	}
	h.key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.corr = int32(binary.BigEndian.Uint32(frame[4:]))
	n := int16(binary.BigEndian.Uint16(frame[8:]))
	rest := frame[10:]
	if n > 0 {
		if int(n) > len(rest) {
			return h, nil, fmt.Errorf("%w: client id overflows frame", errBadFrame)
		}
		h.clientID = string(rest[:n])
		rest = rest[n:]
	} else if n < -1 {
		return h, nil, fmt.Errorf("%w: bad client id length %d", errBadFrame, n)
	}
	return h, rest, nil
}

// skipTags skips a tagged-field section.
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, fmt.Errorf("%w: bad tag count", errBadFrame)
	}
	b = b[n:]
	for i := uint64(0); i < count; i++ {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, fmt.Errorf("%w: bad tag", errBadFrame)
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, fmt.Errorf("%w: bad tag size", errBadFrame)
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// write sends responses in request order, running each one's deferred part
// first. It flushes when nothing else is ready, so pipelined responses
// share syscalls.
func (c *conn) write() {
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	var buf []byte
	failed := false
	for p := range c.queue {
		if failed {
			continue // drain so the reader never blocks on a dead writer
		}
		buf = buf[:0]
		switch {
		case p.raw != nil:
			buf = appendFrame(buf, p.hdr, false, func(b []byte) []byte { return append(b, p.raw...) })
		case p.respond != nil:
			resp := p.respond()
			resp.SetVersion(p.hdr.version)
			// ApiVersions responses always use header v0 (KIP-511), so a
			// client can read them before knowing what we support.
			flexible := resp.IsFlexible() && p.hdr.key != kmsg.ApiVersions.Int16()
			if fr, ok := resp.(*kmsg.FetchResponse); ok {
				// Make room for the record data at once rather than
				// letting append grow the buffer by a quarter at a time
				// through megabytes of batches, copying it each time.
				buf = slices.Grow(buf, fetchSizeHint(fr))
			}
			buf = appendFrame(buf, p.hdr, flexible, resp.AppendTo)
		}
		if len(buf) > 0 {
			if _, err := bw.Write(buf); err != nil {
				failed = true
			}
		}
		if p.closeAfter {
			bw.Flush()
			c.nc.Close()
			failed = true
			continue
		}
		if len(c.queue) == 0 {
			if err := bw.Flush(); err != nil {
				failed = true
			}
		}
		if failed {
			c.nc.Close() // unblocks the reader
		}
	}
	if !failed {
		bw.Flush()
	}
}

func appendFrame(buf []byte, hdr reqHeader, flexible bool, body func([]byte) []byte) []byte {
	buf = append(buf, 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, uint32(hdr.corr))
	if flexible {
		buf = append(buf, 0) // no tagged fields in the response header
	}
	buf = body(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// fetchSizeHint is a little more than a fetch response's encoded size: its
// record data plus a generous allowance for every other field.
func fetchSizeHint(r *kmsg.FetchResponse) int {
	n := 64
	for _, t := range r.Topics {
		n += 64 + len(t.Topic)
		for _, p := range t.Partitions {
			n += 64 + 32*len(p.AbortedTransactions) + len(p.RecordBatches)
		}
	}
	return n
}

// peerHost formats a peer's address as Kafka's client host: a slash and
// the IP address.
func peerHost(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return "/" + ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return "/" + a.String()
	}
	return "/" + host
}
