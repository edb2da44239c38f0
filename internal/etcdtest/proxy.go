package etcdtest

import (
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// dialTimeout bounds a proxy's connection to its target.
	dialTimeout = 2 * time.Second
	// maxStalled bounds the connections a cut proxy holds.
	maxStalled = 64
)

// Proxy forwards TCP connections from a port of 127.0.0.1 to one target
// address, until Cut: then it closes every connection it forwards and
// stalls new ones, so a client that reaches etcd only through it cannot
// reach etcd at all, until Heal.
//
// A stalled connection is accepted and then left unanswered, as when a
// network drops every packet, until Heal forwards it or the client gives
// up. Stalling rather than refusing matters to gRPC clients such as
// etcd's: each refused attempt lengthens their reconnection backoff
// (towards two minutes), so a long Cut would be followed by a long wait
// after Heal; a stalled attempt is simply completed by Heal. At most
// maxStalled connections are held; more are closed at once.
//
// Each forwarded connection runs two goroutines, one per direction, and
// the proxy one more that accepts; stalled connections run none. Cut
// ends the connections' goroutines and the test's end ends them all.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu      sync.Mutex
	cut     bool
	closed  bool
	conns   map[net.Conn]struct{} // both ends of every forwarded connection
	stalled []net.Conn            // accepted while cut, not yet forwarded
}

// NewProxy starts a proxy to target (host:port) on a free port of
// 127.0.0.1, stopped when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: proxy to %s: %v", target, err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr returns the address (host:port) clients should dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection through the proxy and refuses new ones
// until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.closeConnsLocked()
}

// Heal makes the proxy forward again after Cut: the connections it
// stalled, and new ones.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	if p.closed {
		return
	}
	for _, down := range p.stalled {
		p.startLocked(down)
	}
	p.stalled = nil
}

// startLocked starts forwarding down.
func (p *Proxy) startLocked(down net.Conn) {
	p.conns[down] = struct{}{}
	p.wg.Add(1)
	go p.forward(down)
}

func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.closeConnsLocked()
	p.closeStalledLocked()
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) closeConnsLocked() {
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *Proxy) closeStalledLocked() {
	for _, c := range p.stalled {
		c.Close()
	}
	p.stalled = nil
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (out of descriptors, an aborted
			// handshake): keep serving, as net/http does, after a pause
			// so it does not spin.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.mu.Lock()
		switch {
		case p.closed, p.cut && len(p.stalled) == maxStalled:
			down.Close()
		case p.cut:
			p.stalled = append(p.stalled, down)
		default:
			p.startLocked(down)
		}
		p.mu.Unlock()
	}
}

// forward connects down to the target and copies both ways until either
// side closes or Cut closes both.
func (p *Proxy) forward(down net.Conn) {
	defer p.wg.Done()
	up, err := net.DialTimeout("tcp", p.target, dialTimeout)
	p.mu.Lock()
	_, live := p.conns[down] // false once Cut or close has closed it
	if err != nil || !live {
		delete(p.conns, down)
		p.mu.Unlock()
		down.Close()
		if up != nil {
			up.Close()
		}
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()

	done := make(chan struct{})
	go func() {
		io.Copy(up, down)
		close(done)
	}()
	io.Copy(down, up)
	// Either direction ending ends the connection: close both so the
	// other copy returns too.
	down.Close()
	up.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, down)
	delete(p.conns, up)
	p.mu.Unlock()
}

// ProxySet is one Proxy per etcd member: the endpoints to give one client
// (a cluster-mode node, say) so that a test can cut it off from the whole
// cluster while the others keep their access.
type ProxySet struct {
	proxies   []*Proxy
	endpoints []string
}

// ProxyAll starts a proxy to each of endpoints (etcd client URLs such as
// Cluster.Endpoints returns, or bare host:port addresses), stopped when t
// ends.
func ProxyAll(t testing.TB, endpoints []string) *ProxySet {
	t.Helper()
	s := &ProxySet{}
	for _, ep := range endpoints {
		scheme, target := "", ep
		if strings.Contains(ep, "://") {
			u, err := url.Parse(ep)
			if err != nil {
				t.Fatalf("etcdtest: proxy endpoint %q: %v", ep, err)
			}
			scheme, target = u.Scheme+"://", u.Host
		}
		p := NewProxy(t, target)
		s.proxies = append(s.proxies, p)
		s.endpoints = append(s.endpoints, scheme+p.Addr())
	}
	return s
}

// Endpoints returns the proxies' endpoints, in the form and order of the
// endpoints ProxyAll was given.
func (s *ProxySet) Endpoints() []string { return s.endpoints }

// Proxy returns the proxy to the i-th endpoint.
func (s *ProxySet) Proxy(i int) *Proxy { return s.proxies[i] }

// Cut cuts every proxy: no connection through the set reaches etcd.
func (s *ProxySet) Cut() {
	for _, p := range s.proxies {
		p.Cut()
	}
}

// Heal heals every proxy.
func (s *ProxySet) Heal() {
	for _, p := range s.proxies {
		p.Heal()
	}
}
