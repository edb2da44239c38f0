package security

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Protocol is a listener's security protocol, as Kafka names them.
type Protocol string

// The security protocols (Kafka's SecurityProtocol).
const (
	Plaintext     Protocol = "PLAINTEXT"
	SSL           Protocol = "SSL"
	SASLPlaintext Protocol = "SASL_PLAINTEXT"
	SASLSSL       Protocol = "SASL_SSL"
)

// ParseProtocol returns the protocol named s (case-insensitive).
func ParseProtocol(s string) (Protocol, bool) {
	switch p := Protocol(strings.ToUpper(s)); p {
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
		return p, true
	}
	return "", false
}

// TLS reports whether the protocol runs over TLS.
func (p Protocol) TLS() bool { return p == SSL || p == SASLSSL }

// SASL reports whether the protocol authenticates with SASL.
func (p Protocol) SASL() bool { return p == SASLPlaintext || p == SASLSSL }

// Listener is one Kafka listener: a name (what advertised addresses are
// matched by, Kafka's listener name), its security protocol and the
// host:port it binds.
type Listener struct {
	Name     string
	Protocol Protocol
	Addr     string
}

// ParseListeners parses a listener list in Kafka's syntax,
// "PLAINTEXT://127.0.0.1:9092,SASL_SSL://0.0.0.0:9093": NAME://host:port,
// comma-separated. A name is its own security protocol unless protocols
// maps it (Kafka's listener.security.protocol.map, "INTERNAL:SASL_SSL");
// names are unique. The older form, one bare host:port, is a PLAINTEXT
// listener. An empty host binds every interface, as in Kafka.
func ParseListeners(spec string, protocols map[string]Protocol) ([]Listener, error) {
	var out []Listener
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, addr, ok := strings.Cut(part, "://")
		if !ok {
			if len(out) > 0 || strings.Contains(spec, "://") {
				return nil, fmt.Errorf("listener %q: want NAME://host:port", part)
			}
			name, addr = string(Plaintext), part
		}
		name = strings.ToUpper(name)
		if name == "" {
			return nil, fmt.Errorf("listener %q: no name", part)
		}
		proto, ok := protocols[name]
		if !ok {
			if proto, ok = ParseProtocol(name); !ok {
				return nil, fmt.Errorf("listener %q: %s is not a security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL); map the name to one with --listener-security-protocol-map %s:SASL_SSL", part, name, name)
			}
		}
		if _, _, err := splitHostPort(addr); err != nil {
			return nil, fmt.Errorf("listener %q: %w", part, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("listener %s is given twice", name)
		}
		seen[name] = true
		out = append(out, Listener{Name: name, Protocol: proto, Addr: addr})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no listener in %q", spec)
	}
	return out, nil
}

// ParseProtocolMap parses Kafka's listener.security.protocol.map:
// "INTERNAL:SASL_SSL,EXTERNAL:SSL".
func ParseProtocolMap(spec string) (map[string]Protocol, error) {
	m := map[string]Protocol{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, p, ok := strings.Cut(part, ":")
		proto, known := ParseProtocol(p)
		if !ok || name == "" || !known {
			return nil, fmt.Errorf("listener protocol map entry %q: want NAME:PROTOCOL, a protocol among PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", part)
		}
		m[strings.ToUpper(name)] = proto
	}
	return m, nil
}

// ParseAdvertised parses the advertised addresses of listeners in the
// same syntax (NAME://host:port,...) and returns host:port by listener
// name. A name that is not a listener is an error. The older form, one
// bare host:port, advertises the first listener. Listeners without an
// entry advertise their bound address (the caller's default).
func ParseAdvertised(spec string, listeners []Listener) (map[string]string, error) {
	out := map[string]string{}
	known := map[string]bool{}
	for _, l := range listeners {
		known[l.Name] = true
	}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, addr, ok := strings.Cut(part, "://")
		if !ok {
			if len(out) > 0 || strings.Contains(spec, "://") || len(listeners) == 0 {
				return nil, fmt.Errorf("advertised address %q: want NAME://host:port", part)
			}
			name, addr = listeners[0].Name, part
		}
		name = strings.ToUpper(name)
		if !known[name] {
			return nil, fmt.Errorf("advertised address %q: no listener is named %s", part, name)
		}
		host, port, err := splitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("advertised address %q: %w", part, err)
		}
		if host == "" || port == 0 {
			return nil, fmt.Errorf("advertised address %q: clients need a host and a port", part)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("advertised address of listener %s is given twice", name)
		}
		out[name] = addr
	}
	return out, nil
}

func splitHostPort(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: not a port number", port)
	}
	return host, int(p), nil
}
