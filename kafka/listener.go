package kafka

// Listeners. A Server serves any number of listeners, each with a name
// and a security protocol as Kafka's listeners setting has them
// (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) and its own advertised
// address: Metadata, FindCoordinator, DescribeCluster and the leader
// hints of Produce and Fetch answer a request with the addresses of the
// listener it came on (Kafka's per-listener endpoints), so that a client
// of the SASL_SSL listener is never sent to the PLAINTEXT one.

import (
	"crypto/tls"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/cohort-dev/cohort/security"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Listener describes one listener to ServeListener.
type Listener struct {
	// Name is the listener's name, what advertised addresses and other
	// nodes' endpoints are matched by. Default: the protocol's name.
	Name string
	// Protocol is the security protocol. Default PLAINTEXT.
	Protocol security.Protocol
	// Advertised is the host:port clients are given for this listener.
	// Default: the bound address (Config.AdvertisedAddr for the first
	// listener, if set).
	Advertised string
	// TLS is the TLS server configuration of an SSL or SASL_SSL listener
	// (security.ServerConfig). Required for them; ignored otherwise.
	TLS *tls.Config
}

// Endpoint is a host and port clients can reach.
type Endpoint struct {
	Host string
	Port int32
}

// listener is a listener being served: its description and advertised
// endpoint.
type listener struct {
	Listener
	adv Endpoint
}

// plaintextListener is what Serve serves: the old single listener.
func (s *Server) plaintextListener() Listener {
	return Listener{Name: string(security.Plaintext), Protocol: security.Plaintext, Advertised: s.cfg.AdvertisedAddr}
}

// ServeListener accepts connections on ln as listener l until Shutdown,
// as Serve does. A SASL listener needs Config.SASL, a TLS one l.TLS.
func (s *Server) ServeListener(ln net.Listener, l Listener) error {
	if l.Protocol == "" {
		l.Protocol = security.Plaintext
	}
	if l.Name == "" {
		l.Name = string(l.Protocol)
	}
	if l.Protocol.TLS() && l.TLS == nil {
		ln.Close()
		return fmt.Errorf("listener %s: %s needs a TLS configuration", l.Name, l.Protocol)
	}
	if l.Protocol.SASL() && s.cfg.SASL == nil {
		ln.Close()
		return fmt.Errorf("listener %s: %s needs SASL mechanisms and credentials", l.Name, l.Protocol)
	}
	adv := l.Advertised
	if adv == "" {
		adv = ln.Addr().String()
	}
	ep, err := parseEndpoint(adv)
	if err != nil {
		ln.Close()
		return fmt.Errorf("listener %s: advertised address: %w", l.Name, err)
	}
	lst := &listener{Listener: l, adv: ep}
	s.mu.Lock()
	select {
	case <-s.closing:
		s.mu.Unlock()
		ln.Close()
		return nil
	default:
	}
	if _, dup := s.listeners[l.Name]; !dup {
		// Serving more sockets under one name (Serve called again)
		// advertises the first.
		s.listeners[l.Name] = lst
	}
	if s.host == "" {
		// The first listener is the default: what Brokers without an
		// endpoint for a request's listener are given.
		s.host, s.port = ep.Host, ep.Port
	}
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	return s.accept(ln, lst)
}

// endpoints are the advertised endpoints of the listeners served, by
// name.
func (s *Server) endpoints() map[string]Endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Endpoint, len(s.listeners))
	for name, l := range s.listeners {
		out[name] = l.adv
	}
	return out
}

// advertisedListeners is Kafka's advertised.listeners value.
func (s *Server) advertisedListeners() string {
	eps := s.endpoints()
	names := make([]string, 0, len(eps))
	for n := range eps {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n + "://" + net.JoinHostPort(eps[n].Host, strconv.Itoa(int(eps[n].Port))))
	}
	return b.String()
}

func parseEndpoint(addr string) (Endpoint, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Endpoint{}, fmt.Errorf("%q: %w", addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return Endpoint{}, fmt.Errorf("port %q: %w", port, err)
	}
	return Endpoint{Host: host, Port: int32(p)}, nil
}

// at is the broker's endpoint for the named listener: its endpoint of
// that name if it has one, else its default address (a node registered
// before listeners had names, or one without that listener).
func (b Broker) at(name string) (string, int32) {
	if e, ok := b.Endpoints[name]; ok {
		return e.Host, e.Port
	}
	return b.Host, b.Port
}

// principalName is Principal().String(), without allocating.
func (h *reqHeader) principalName() string {
	if h.sess == nil {
		return security.Anonymous.String()
	}
	return h.sess.name
}

// tenant is the organisation the request's connection acts for ("" for
// the default one, and for a request without a connection).
func (h *reqHeader) tenant() string {
	if h.sess == nil {
		return ""
	}
	return h.sess.tenant
}

// listenerName is the name of the listener a request came on ("" for a
// request without a connection, as in tests that call handlers).
func (h *reqHeader) listenerName() string {
	if h.sess == nil || h.sess.listener == nil {
		return ""
	}
	return h.sess.listener.Name
}

// Principal is who the request's connection acts for:
// security.Anonymous until a SASL exchange or a verified client
// certificate says otherwise.
func (h *reqHeader) Principal() security.Principal {
	if h.sess == nil {
		return security.Anonymous
	}
	return h.sess.principal
}

// fetchHintsAt gives a fetch response's leader hints (KIP-951) the
// endpoints of the request's listener.
func (s *Server) fetchHintsAt(hdr *reqHeader, resp kmsg.Response) kmsg.Response {
	fr, ok := resp.(*kmsg.FetchResponse)
	if !ok || len(fr.Brokers) == 0 || hdr.listenerName() == "" {
		return resp
	}
	for i := range fr.Brokers {
		if b, ok := s.broker(fr.Brokers[i].NodeID); ok {
			fr.Brokers[i].Host, fr.Brokers[i].Port = b.at(hdr.listenerName())
		}
	}
	return resp
}
