// Package kafka is Cohort's Kafka wire server: it reads size-prefixed
// frames, decodes them with franz-go's kmsg, dispatches each API key to its
// handler (one file per key, named like 00_produce.go) and writes responses
// back in request order.
//
// Broker APIs are served from the embedded topic log (package topics). The
// package holds no durable state of its own and must not block one
// connection on another: a slow fetch or fsync delays only the responses
// queued behind it on the same connection, as Kafka's ordering requires.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/topics"
)

// Config configures a Server. The zero value of each optional field means
// its documented default.
type Config struct {
	// Topics is the topic log the broker APIs serve. Required.
	Topics *topics.Log
	// Groups is the group coordinator the group APIs are handed to.
	// Required.
	Groups *coordinator.Coordinator
	// AdvertisedAddr is the host:port Metadata and FindCoordinator give
	// clients. Default: the listener's address.
	AdvertisedAddr string
	// MaxRequestBytes caps a request frame; a larger one closes the
	// connection. Default 100 MiB, Kafka's socket.request.max.bytes.
	MaxRequestBytes int32
	// AutoCreateTopics lets Metadata create unknown topics, as Kafka's
	// auto.create.topics.enable. Default false in Config; the CLI
	// defaults it to true.
	AutoCreateTopics bool
	// DefaultPartitions is the partition count of auto-created topics and
	// of CreateTopics with -1. Default 1.
	DefaultPartitions int32
	// MaxInflight caps the requests one connection may have decoded but
	// not yet answered; reading pauses beyond it. Default 256.
	MaxInflight int
	// Logger; nil discards.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = 100 << 20
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = 1
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = 256
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Server serves the Kafka protocol on one or more listeners.
type Server struct {
	cfg    Config
	logger *slog.Logger
	topics *topics.Log
	groups *coordinator.Coordinator

	host string
	port int32

	closing chan struct{} // closed by Shutdown: long polls return early

	mu    sync.Mutex
	lns   []net.Listener
	conns map[*conn]struct{}
	wg    sync.WaitGroup // one per connection
}

// New returns a Server; call Serve to accept connections.
func New(cfg Config) (*Server, error) {
	if cfg.Topics == nil || cfg.Groups == nil {
		return nil, errors.New("kafka: Config.Topics and Config.Groups are required")
	}
	cfg.setDefaults()
	s := &Server{
		cfg:     cfg,
		logger:  cfg.Logger,
		topics:  cfg.Topics,
		groups:  cfg.Groups,
		closing: make(chan struct{}),
		conns:   make(map[*conn]struct{}),
	}
	if cfg.AdvertisedAddr != "" {
		if err := s.setAdvertised(cfg.AdvertisedAddr); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Server) setAdvertised(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("kafka: advertised address %q: %w", addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("kafka: advertised port %q: %w", port, err)
	}
	s.host, s.port = host, int32(p)
	return nil
}

// Serve accepts connections on ln until Shutdown. It returns nil after
// Shutdown and the accept error otherwise. Without an advertised address,
// the first listener's address is advertised.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	select {
	case <-s.closing:
		s.mu.Unlock()
		ln.Close()
		return nil
	default:
	}
	if s.host == "" {
		if err := s.setAdvertised(ln.Addr().String()); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	s.lns = append(s.lns, ln)
	s.mu.Unlock()

	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.closing:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		c := newConn(s, nc)
		s.mu.Lock()
		select {
		case <-s.closing:
			s.mu.Unlock()
			nc.Close()
			continue
		default:
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// Shutdown stops accepting, stops reading new requests, answers every
// request already read (cutting long polls short) and closes the
// connections. It returns when all are closed or ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	for _, ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		c.stopReading()
	}
	s.mu.Unlock()
	// Parked group requests (a JoinGroup on the barrier) would hold their
	// connections for up to a rebalance timeout: closing the coordinator
	// writes what is pending and answers them COORDINATOR_NOT_AVAILABLE,
	// which clients retry elsewhere or later.
	s.groups.Close()

	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

func (s *Server) connDone(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// now is the wall clock, for timestamps and long-poll deadlines at the
// edge; the coordinator core never reads it.
func now() time.Time { return time.Now() }
