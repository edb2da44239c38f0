package security

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// ClientAuth is whether a TLS listener asks clients for certificates, as
// Kafka's ssl.client.auth.
type ClientAuth string

// The client-certificate policies.
const (
	// ClientAuthNone asks for no certificate (Kafka's "none").
	ClientAuthNone ClientAuth = "none"
	// ClientAuthRequest asks for one and verifies it if given; a client
	// without one is Anonymous (Kafka's "requested").
	ClientAuthRequest ClientAuth = "request"
	// ClientAuthRequire refuses a client without a certificate the CA
	// signed (Kafka's "required").
	ClientAuthRequire ClientAuth = "require"
)

// ParseClientAuth parses none, request or require (and Kafka's spellings
// requested and required).
func ParseClientAuth(s string) (ClientAuth, error) {
	switch s {
	case "", "none":
		return ClientAuthNone, nil
	case "request", "requested":
		return ClientAuthRequest, nil
	case "require", "required":
		return ClientAuthRequire, nil
	}
	return "", fmt.Errorf("client auth %q: want none, request or require", s)
}

// Certs is a certificate and key pair read from files and read again on
// Reload, or when the files change (Watch), without restarting anything:
// TLS configurations made by ServerConfig take the current pair at each
// handshake (tls.Config.GetCertificate), so connections open keep their
// session and new ones get the new certificate. A reload that fails (a
// half-written file, a key that does not match) keeps the previous pair.
type Certs struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]

	mu  sync.Mutex
	sum [32]byte // of the files last loaded
}

// LoadCerts reads the PEM certificate chain and key.
func LoadCerts(certFile, keyFile string) (*Certs, error) {
	c := &Certs{certFile: certFile, keyFile: keyFile}
	if _, err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files again; changed reports whether they differed
// from the pair in use. On error the pair in use stays.
func (c *Certs) Reload() (changed bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	certPEM, err := os.ReadFile(c.certFile)
	if err != nil {
		return false, fmt.Errorf("tls certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(c.keyFile)
	if err != nil {
		return false, fmt.Errorf("tls key: %w", err)
	}
	sum := sha256.Sum256(append(append(bytes.Clone(certPEM), 0), keyPEM...))
	if sum == c.sum && c.cur.Load() != nil {
		return false, nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("tls certificate %s and key %s: %w", c.certFile, c.keyFile, err)
	}
	c.cur.Store(&pair)
	c.sum = sum
	return true, nil
}

// Current is the pair in use.
func (c *Certs) Current() *tls.Certificate { return c.cur.Load() }

// GetCertificate is tls.Config.GetCertificate: the pair in use.
func (c *Certs) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cur.Load(), nil
}

// GetClientCertificate is tls.Config.GetClientCertificate, for a node
// dialling another with the same pair (cluster relays).
func (c *Certs) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return c.cur.Load(), nil
}

// Watch reloads the files every interval until ctx ends, so that a
// certificate renewed on disk (cert-manager, certbot) is served without a
// signal; changed is called after each reload that took a new pair, and
// failed after each that failed (not again until the files change).
func (c *Certs) Watch(ctx context.Context, interval time.Duration, changed func(), failed func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ok, err := c.Reload()
		switch {
		case err != nil:
			if err.Error() != lastErr && failed != nil {
				failed(err)
			}
			lastErr = err.Error()
		case ok:
			lastErr = ""
			if changed != nil {
				changed()
			}
		}
	}
}

// LoadCertPool reads PEM CA certificates from a file.
func LoadCertPool(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tls client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("tls client CA %s: no PEM certificate in it", file)
	}
	return pool, nil
}

// ServerConfig is the TLS configuration of every Cohort listener: TLS 1.2
// or later (Kafka's default ssl.enabled.protocols), the pair from certs at
// each handshake, and client certificates as auth says, verified against
// clientCAs. With ClientAuthRequest or ClientAuthRequire, clientCAs is
// required.
func ServerConfig(certs *Certs, clientCAs *x509.CertPool, auth ClientAuth) (*tls.Config, error) {
	if certs == nil {
		return nil, errors.New("tls: no certificate (--tls-cert and --tls-key)")
	}
	cfg := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: certs.GetCertificate,
		ClientAuth:     tls.NoClientCert,
	}
	switch auth {
	case ClientAuthRequest:
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequire:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if cfg.ClientAuth != tls.NoClientCert {
		if clientCAs == nil {
			return nil, fmt.Errorf("tls: client auth %q needs a client CA (--tls-client-ca)", auth)
		}
		cfg.ClientCAs = clientCAs
	}
	return cfg, nil
}

// PeerPrincipal is the principal of a TLS connection's verified client
// certificate, or Anonymous without one.
func PeerPrincipal(st tls.ConnectionState) Principal {
	if len(st.VerifiedChains) > 0 && len(st.VerifiedChains[0]) > 0 {
		return FromCertificate(st.VerifiedChains[0][0])
	}
	return Anonymous
}
