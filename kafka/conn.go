package kafka

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/security"
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
	// sess is the connection's session: its listener, principal and SASL
	// state. Handlers read and change it on the reader. Nil for a
	// request decoded without a connection (tests).
	sess *session
}

// session is what a connection knows of its client: the listener it came
// on and who it is. Only the connection's reader touches it.
type session struct {
	conn     *conn
	listener *listener
	// principal is who the connection acts for: Anonymous, the subject
	// of a verified client certificate, or the SASL user.
	principal security.Principal
	// name is principal.String(), kept so that observing a request
	// costs no allocation.
	name string
	// tenant is the organisation principal belongs to (Config.Orgs),
	// fixed when the principal is: every group, offset, transactional
	// id, topic and ACL the connection names is this tenant's. Written
	// only before the requests that read it (a re-authentication keeps
	// it), so responses built on the writer may read it too.
	tenant string
	// base is the connection's context; ctx is base with the principal,
	// what every request of the connection is handed.
	base, ctx context.Context
	// sasl is the SASL exchange's state on a SASL listener, else nil.
	sasl *saslState
}

// setPrincipal makes p the connection's principal, and its organisation
// the connection's tenant, from its next request on. A re-authentication
// (KIP-368, the same principal) keeps the tenant the connection had.
func (ss *session) setPrincipal(p security.Principal) {
	if ss.name != "" && p == ss.principal {
		return
	}
	ss.principal, ss.name = p, p.String()
	ss.tenant = ss.conn.s.cfg.Orgs.TenantOf(p)
	ss.ctx = security.WithPrincipal(ss.base, p)
}

// pending is a request whose response is still to be written. respond runs
// on the writer, in request order; nil means the request gets no response
// (a produce with acks=0).
type pending struct {
	hdr     reqHeader
	respond func() kmsg.Response
	// respVersion is the version the response is encoded at: the
	// request's, except 0 for the UNSUPPORTED_VERSION answer to an
	// ApiVersions version we do not serve.
	respVersion int16
	// closeAfter closes the connection once this response is written (or
	// instead of writing it, with respond nil): how Kafka signals an error
	// to an acks=0 producer.
	closeAfter bool
	// raw, if set, is written instead of a Kafka response: the
	// size-prefixed token of a SASL exchange begun with SaslHandshake v0
	// (nil from it: nothing, only the close). It runs on the writer.
	raw func() []byte
	// granted is the request's frame size taken from Server.budget,
	// given back once the response is built.
	granted int64
	// ctx is the request's context: the connection's, as the observer's
	// RequestReceived returned it. The handler and RequestAnswered get it.
	ctx context.Context
	// obs is the request as reported to the observer (zero when it is
	// observe.Nop): RequestAnswered gets the same value.
	obs observe.Request
	// tenant is the organisation the request acts for, and throttle the
	// throttle its rate quotas asked for on the reader (quotas.go).
	tenant   string
	throttle time.Duration
}

// Observing requests. Every request that decodes (a frame the server
// serves, and an ApiVersions of a version it does not, which is answered)
// is reported to Server.obs exactly once by RequestReceived and exactly
// once by RequestAnswered, so that the two counts always meet:
//
//   - a response: on the writer, once the response is built and encoded,
//     just before it is written (even if that write then fails);
//   - no response (a produce with acks=0): on the reader, as soon as its
//     handler returns, which has done all of it;
//   - never built, because a write on the connection failed (a client
//     not reading, a reset): with Resp nil, as the writer drains the
//     requests behind the failure;
//   - a handler that panicked (a bug; the connection closes): with Resp
//     nil, on the reader.
//
// The UNSUPPORTED_VERSION answer to ApiVersions is reported like any
// other, with the v0 response it is encoded as.
//
// A frame that is refused (bad header, a key or version not served, a
// body that does not decode) closes the connection and is not reported:
// there is no request to speak of.

// received reports p, a frame of size bytes complete at at and decoded
// as req (nil: it did not decode), to the observer and takes the context
// it returns.
func (s *Server) received(p *pending, req kmsg.Request, size int, at time.Time) {
	if !s.observing {
		return
	}
	p.obs = observe.Request{
		Key:       p.hdr.key,
		Version:   p.hdr.version,
		ClientID:  p.hdr.clientID,
		Host:      strings.TrimPrefix(p.hdr.host, "/"),
		Principal: p.hdr.principalName(),
		Tenant:    p.hdr.tenant(),
		Size:      size,
		Received:  at,
		Msg:       req,
	}
	p.ctx = s.obs.RequestReceived(p.ctx, p.obs)
}

// answered reports p's response (nil: none) to the observer.
func (s *Server) answered(p *pending, resp kmsg.Response) {
	if !s.observing {
		return
	}
	s.obs.RequestAnswered(p.ctx, p.obs, observe.Answer{Resp: resp, Latency: time.Since(p.obs.Received)})
}

type conn struct {
	s      *Server
	nc     net.Conn // a *tls.Conn on a TLS listener
	sess   session
	remote string
	ip     string // the peer's IP address, for MaxConnectionsPerIP
	host   string // "/" and the peer's IP, as DescribeGroups shows it
	rd     frameReader
	// rdl is the read deadline the reader last set (zero: none). Only
	// the reader uses it, to skip setting one it already has: each set
	// costs a timer update in the runtime's poller, a few percent of a
	// small request's CPU.
	rdl time.Time
	// wdl is the write deadline the writer last set; only it uses it.
	wdl time.Time

	// ctx is the connection's context, every request's parent. It is
	// cancelled when the peer hangs up (the reader meets the end of the
	// stream or a read error) or the connection is closed, for observers
	// (a tracer's span) and for what only waits on the client's behalf.
	// Its cancellation withdraws nothing: every request already read is
	// still handled, and answered if the connection can take it, and the
	// coordinator serves what it was handed (a commit whose client has
	// gone is still committed, as in Kafka).
	ctx    context.Context
	cancel context.CancelFunc

	// queue and the writer goroutine are started by the first request,
	// so that an idle connection costs one goroutine and no buffers.
	queue      chan *pending
	writerDone chan struct{}

	// inflight counts requests read and not yet answered; lastActive is
	// when a byte was last read or a response last written (UnixNano).
	// Together they say whether the connection is idle.
	inflight   atomic.Int32
	lastActive atomic.Int64

	mu      sync.Mutex // orders read deadlines against stopReading
	stopped bool

	// mutedUntil is when a quota's mute ends (UnixNano; quotas.go): the
	// reader takes no request before it.
	mutedUntil atomic.Int64

	gone      chan struct{} // closed by close
	closeOnce sync.Once
}

func newConn(s *Server, nc net.Conn, ip string, l *listener) *conn {
	if l.Protocol.TLS() {
		// The handshake runs on the connection's goroutine (serve), not
		// the accept loop.
		nc = tls.Server(nc, l.TLS)
	}
	c := &conn{
		s:      s,
		nc:     nc,
		remote: nc.RemoteAddr().String(),
		ip:     ip,
		host:   "/" + ip,
		rd:     newFrameReader(nc),
		gone:   make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.sess = session{conn: c, listener: l, base: c.ctx}
	c.sess.setPrincipal(security.Anonymous)
	if l.Protocol.SASL() {
		c.sess.sasl = &saslState{}
	}
	c.touch()
	return c
}

// close closes the socket, which unblocks the reader and the writer, and
// cancels the connection's context.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.cancel()
		close(c.gone)
		c.nc.Close()
	})
}

// touch marks the connection active now, and returns now.
func (c *conn) touch() time.Time {
	now := time.Now()
	c.lastActive.Store(now.UnixNano())
	return now
}

// stopReading makes the reader's next (or current) read fail, so it stops
// taking requests; what was read is still answered.
func (c *conn) stopReading() {
	c.mu.Lock()
	c.stopped = true
	c.nc.SetReadDeadline(time.Unix(1, 0))
	c.mu.Unlock()
}

// setReadDeadline sets the read deadline (zero: none) unless Shutdown has
// stopped reading, in which case it returns false.
func (c *conn) setReadDeadline(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	c.nc.SetReadDeadline(t)
	c.rdl = t
	return true
}

func (c *conn) serve() {
	defer c.s.connDone(c)
	if tc, ok := c.nc.(*tls.Conn); ok && !c.handshake(tc) {
		c.close()
		return
	}
	c.read()
	c.rd.release()
	if c.queue != nil {
		close(c.queue)
		<-c.writerDone
	}
	c.close()
	// Its share sessions go with it (KIP-932), and what their members
	// hold goes back.
	c.s.shareSess.closed(c)
}

// owner is the connection a request came on, which owns the share
// sessions it opens; nil without one (tests).
func (h *reqHeader) owner() any {
	if h.sess == nil || h.sess.conn == nil {
		return nil
	}
	return h.sess.conn
}

// read decodes frames and dispatches them until the connection ends or a
// frame is bad. Each request's ordered part runs here, one at a time.
func (c *conn) read() {
	cfg := &c.s.cfg
	for {
		if !c.waitMuted() {
			return
		}
		size, ok := c.readSize()
		if !ok {
			return
		}
		if size < 8 || size > cfg.MaxRequestBytes {
			c.s.warn.Warn("closing connection: bad request size", "remote", c.remote, "size", size, "max", cfg.MaxRequestBytes)
			return
		}
		// Take the frame's bytes from the budget before allocating them,
		// so declared sizes alone cannot exhaust memory.
		if !c.s.budget.acquire(int64(size), c.s.closing, c.gone) {
			return
		}
		granted := int64(size)
		frame := make([]byte, size)
		// A frame already in the buffer is read without waiting, so
		// needs no deadline (the common case: its size and body came in
		// one read).
		if cfg.RequestReadTimeout > 0 && c.rd.buffered() < int(size) {
			if !c.setReadDeadline(time.Now().Add(cfg.RequestReadTimeout)) {
				c.s.budget.release(granted)
				return
			}
		}
		n, err := c.rd.readFull(frame)
		var complete time.Time // when the frame was, if err is nil
		if n > 0 {
			complete = c.touch()
		}
		if err != nil {
			c.s.budget.release(granted)
			if isTimeout(err) && !c.isStopped() {
				c.s.warn.Warn("closing connection: request frame not complete in time", "remote", c.remote, "size", size, "received", n, "timeout", cfg.RequestReadTimeout)
				return
			}
			c.readEnded(err)
			return
		}
		if c.sess.sasl != nil {
			p, v := c.gate(frame, complete)
			switch v {
			case gateClose:
				c.s.budget.release(granted)
				return
			case gateAnswered:
				p.granted = granted
				if !c.enqueue(p) {
					return
				}
				continue
			}
		}
		// A mute that began while this frame was read holds it too.
		if !c.waitMuted() {
			c.s.budget.release(granted)
			return
		}
		p, err := c.s.decode(c.sess.ctx, frame, c.host, complete, &c.sess)
		if err != nil {
			c.s.budget.release(granted)
			c.s.warn.Warn("closing connection: bad request", "remote", c.remote, "err", err)
			return
		}
		p.granted = granted
		if !c.enqueue(p) {
			return
		}
	}
}

// readSize reads a frame's size. While nothing is in flight it waits at
// most until the connection has been idle for ConnectionsMaxIdle, as
// Kafka's connections.max.idle.ms, and then closes it.
func (c *conn) readSize() (int32, bool) {
	var b [4]byte
	got := 0
	idle := c.s.cfg.ConnectionsMaxIdle
	for got < len(b) {
		deadline := time.Time{}
		if idle > 0 {
			deadline = time.Unix(0, c.lastActive.Load()).Add(idle)
			if c.inflight.Load() > 0 {
				deadline = time.Now().Add(idle)
			}
		}
		// A deadline a little earlier than wanted is kept rather than
		// set again: when it passes, the check below finds the activity
		// since and waits again.
		if keep := !c.rdl.IsZero() && !deadline.IsZero() && !c.rdl.After(deadline) && deadline.Sub(c.rdl) < idle/4; !keep {
			if !c.setReadDeadline(deadline) {
				return 0, false
			}
		}
		n, err := c.rd.read(b[got:])
		got += n
		if n > 0 {
			c.touch()
		}
		if err == nil {
			continue
		}
		if !isTimeout(err) || c.isStopped() {
			c.readEnded(err)
			return 0, false
		}
		c.rdl = time.Time{} // passed: never kept
		if c.inflight.Load() > 0 || time.Since(time.Unix(0, c.lastActive.Load())) < idle {
			continue // activity since the deadline was set
		}
		c.s.logger.Debug("closing idle connection", "remote", c.remote, "idle", idle)
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(b[:])), true
}

func (c *conn) isStopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (c *conn) readEnded(err error) {
	if isTimeout(err) {
		return // Shutdown: the connection still answers what it read
	}
	c.cancel() // the peer hung up, or the socket failed
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
		return
	}
	c.s.logger.Debug("read failed", "remote", c.remote, "err", err)
}

// enqueue hands p to the writer, starting it for the first request. It
// returns false if the connection closes after p.
func (c *conn) enqueue(p pending) bool {
	if c.queue == nil {
		c.queue = make(chan *pending, c.s.cfg.MaxInflight)
		c.writerDone = make(chan struct{})
		go func() {
			defer close(c.writerDone)
			c.write()
		}()
	}
	c.inflight.Add(1)
	c.queue <- &p
	return !p.closeAfter
}

// frameReader reads a connection's frames through a buffer that it
// holds only while bytes are waiting in it: the buffer comes from a pool
// when a frame is read and goes back once it is empty, so thousands of
// idle connections hold none. Pipelined small requests still arrive
// many to a read.
//
// On a plain TCP connection the reader waits for the socket to become
// readable without a buffer and then reads whatever is there, the next
// frame's size and body together, into a pooled one (raw): one read
// system call per small request after the one that finds the socket
// empty, where reading the size on its own took two more.
type frameReader struct {
	nc   net.Conn
	raw  syscall.RawConn // nil: not a socket of this process (TLS)
	buf  *[]byte         // nil while empty
	r, w int
}

func newFrameReader(nc net.Conn) frameReader {
	return frameReader{nc: nc, raw: rawConn(nc)}
}

const readBufSize = 16 << 10

var readBufs = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}

// release gives the buffer back if nothing is waiting in it.
func (fr *frameReader) release() {
	if fr.buf != nil && fr.r == fr.w {
		readBufs.Put(fr.buf)
		fr.buf, fr.r, fr.w = nil, 0, 0
	}
}

// read reads into p what is buffered, or, with nothing buffered, waits
// for the connection without holding a buffer.
func (fr *frameReader) read(p []byte) (int, error) {
	if fr.r < fr.w {
		n := copy(p, (*fr.buf)[fr.r:fr.w])
		fr.r += n
		return n, nil
	}
	fr.release()
	if fr.raw == nil {
		return fr.nc.Read(p)
	}
	if err := fr.fill(); err != nil {
		return 0, err
	}
	n := copy(p, (*fr.buf)[fr.r:fr.w])
	fr.r += n
	return n, nil
}

// buffered is how many bytes are waiting in the buffer.
func (fr *frameReader) buffered() int { return fr.w - fr.r }

// readFull fills p and returns how many bytes it got.
func (fr *frameReader) readFull(p []byte) (int, error) {
	n := 0
	if fr.r < fr.w {
		n = copy(p, (*fr.buf)[fr.r:fr.w])
		fr.r += n
	}
	if n == len(p) {
		return n, nil
	}
	fr.release()
	if len(p)-n >= readBufSize {
		m, err := io.ReadFull(fr.nc, p[n:])
		return n + m, err
	}
	// A small rest: read it with whatever follows it.
	fr.buf = readBufs.Get().(*[]byte)
	buf := *fr.buf
	for fr.w < len(p)-n {
		m, err := fr.nc.Read(buf[fr.w:])
		fr.w += m
		if err != nil && fr.w < len(p)-n {
			got := copy(p[n:], buf[:fr.w])
			fr.r = fr.w
			return n + got, err
		}
	}
	fr.r = copy(p[n:], buf[:fr.w])
	return len(p), nil
}

// errBadFrame marks a frame that closes the connection.
var errBadFrame = errors.New("bad frame")

// decode parses one frame, from host ("/" and the peer's IP) on a
// connection whose context is ctx and complete at received, reports it to
// the observer and runs the request's ordered part. A panic in a handler
// is a bug; it closes only this connection.
func (s *Server) decode(ctx context.Context, frame []byte, host string, received time.Time, sess *session) (p pending, err error) {
	hdr, body, err := parseHeader(frame)
	if err != nil {
		return p, err
	}
	hdr.host = host
	hdr.sess = sess
	p.hdr = hdr
	p.respVersion = hdr.version
	p.ctx = ctx
	unanswered := false // reported received, not yet answered
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("handler panicked; closing connection", "api_key", hdr.key, "version", hdr.version, "panic", r, "stack", string(debug.Stack()))
			if unanswered {
				s.answered(&p, nil)
			}
			p, err = pending{}, fmt.Errorf("%w: handler panicked", errBadFrame)
		}
	}()

	h, ok := handlers[hdr.key]
	if !ok || hdr.version < h.min || hdr.version > h.max {
		if hdr.key == kmsg.ApiVersions.Int16() {
			// Kafka's rule: answer an ApiVersions we cannot parse with
			// UNSUPPORTED_VERSION in v0 format, so the client can retry
			// with a version from the list.
			s.received(&p, nil, len(frame), received)
			p.respond = done(unsupportedApiVersions())
			p.respVersion = 0
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
	s.received(&p, req, len(frame), received)
	unanswered = true
	m := s.startQuota(&hdr)
	p.respond = h.fn(p.ctx, s, &hdr, req)
	p.tenant, p.throttle = m.tenant, s.endQuota(m, hdr.key, len(frame))
	p.closeAfter = hdr.closeAfter
	if p.respond == nil {
		// No response (acks=0): the handler did all of it. A throttle
		// mutes the connection at once, as Kafka's.
		unanswered = false
		s.answered(&p, nil)
		if sess != nil && sess.conn != nil {
			sess.conn.mute(p.throttle)
		}
	}
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

// Writer buffering: responses are gathered until nothing else is ready
// or flushAt bytes are waiting, so pipelined responses share syscalls; a
// buffer grown past keepBuf for a large fetch is not kept between
// writes, so an idle connection does not hold it.
const (
	flushAt    = 64 << 10
	keepBuf    = 64 << 10
	writeChunk = 1 << 20
)

// write sends responses in request order, running each one's deferred part
// first.
func (c *conn) write() {
	var buf []byte
	failed := false
	for p := range c.queue {
		if !failed {
			buf = c.appendResponse(buf, p)
		} else if p.respond != nil {
			c.s.answered(p, nil) // never built: the connection failed
		}
		c.s.budget.release(p.granted)
		if !failed && (p.closeAfter || len(c.queue) == 0 || len(buf) >= flushAt) {
			if err := c.writeOut(buf); err != nil {
				if isTimeout(err) {
					c.s.warn.Warn("closing connection: client is not reading its responses", "remote", c.remote, "timeout", c.s.cfg.ResponseWriteTimeout)
				}
				failed = true
			}
			if p.closeAfter {
				failed = true
			}
			if failed {
				c.close() // unblocks the reader
			}
			if cap(buf) > keepBuf {
				buf = nil
			} else {
				buf = buf[:0]
			}
		}
		// Drained without a response once failed, so the reader never
		// blocks on a dead writer. Touched before the count drops, so
		// the reader never sees nothing in flight with a stale time.
		c.touch()
		c.inflight.Add(-1)
	}
}

// appendResponse runs p's deferred part, appends its response frame and
// reports the response to the observer.
func (c *conn) appendResponse(buf []byte, p *pending) []byte {
	if p.raw != nil {
		if tok := p.raw(); tok != nil {
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(tok)))
			buf = append(buf, tok...)
		}
		return buf
	}
	if p.respond == nil {
		return buf // reported by decode
	}
	resp := p.respond()
	resp.SetVersion(p.respVersion)
	if c.s.quotas.reg != nil {
		// Muted from now: the response is flushed before the reader
		// could take another request anyway (KIP-219).
		c.mute(c.quotaResponse(p, resp))
	}
	// ApiVersions responses always use header v0 (KIP-511), so a client
	// can read them before knowing what we support.
	flexible := resp.IsFlexible() && p.hdr.key != kmsg.ApiVersions.Int16()
	// Make room for a large answer at once rather than letting append
	// grow the buffer by a quarter at a time through megabytes, copying
	// it each time: a fetch's record data, a ListGroups of a million
	// groups (30 MB).
	switch r := resp.(type) {
	case *kmsg.FetchResponse:
		buf = slices.Grow(buf, fetchSizeHint(r))
	case *kmsg.ListGroupsResponse:
		buf = slices.Grow(buf, listGroupsSizeHint(r))
	}
	buf = appendFrame(buf, p.hdr, flexible, resp.AppendTo)
	c.s.answered(p, resp)
	return buf
}

// writeOut writes b in chunks, each with at least ResponseWriteTimeout to
// go: the deadline is moved, half as far again, only when less than that
// is left, rather than for every write (each move is a timer update in the
// runtime's poller, a few percent of a small request's CPU).
func (c *conn) writeOut(b []byte) error {
	for len(b) > 0 {
		n := min(len(b), writeChunk)
		if t := c.s.cfg.ResponseWriteTimeout; t > 0 {
			if now := time.Now(); c.wdl.Sub(now) < t {
				c.wdl = now.Add(t + t/2)
				c.nc.SetWriteDeadline(c.wdl)
			}
		}
		m, err := c.nc.Write(b[:n])
		b = b[m:]
		if err != nil {
			return err
		}
	}
	return nil
}

// appendFrame appends one response frame (size, header, body) to buf.
func appendFrame(buf []byte, hdr reqHeader, flexible bool, body func([]byte) []byte) []byte {
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, uint32(hdr.corr))
	if flexible {
		buf = append(buf, 0) // no tagged fields in the response header
	}
	buf = body(buf)
	binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-4))
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

// listGroupsSizeHint is a little more than a ListGroups response's
// encoded size: each group's strings, and their lengths and tags.
func listGroupsSizeHint(r *kmsg.ListGroupsResponse) int {
	n := 64
	for _, g := range r.Groups {
		n += 16 + len(g.Group) + len(g.ProtocolType) + len(g.GroupState) + len(g.GroupType)
	}
	return n
}

// peerIP is a peer's IP address; Kafka's client host is a slash and it.
func peerIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
