package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// clientSecurity is how a Kafka-speaking command reaches a TLS or SASL
// listener: the flags every such command takes (--tls, --tls-ca,
// --tls-cert, --tls-key, --sasl-mechanism, --sasl-user,
// --sasl-password), as kcat's -X security.protocol and sasl.* settings.
type clientSecurity struct {
	tls                    bool
	ca, cert, key          string
	mechanism, user, passw string
}

func (c *clientSecurity) flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.tls, "tls", false, "connect over TLS (an SSL or SASL_SSL listener)")
	fs.StringVar(&c.ca, "tls-ca", "", "PEM `file` of the CAs to verify the brokers with (default: the system's); implies --tls")
	fs.StringVar(&c.cert, "tls-cert", "", "PEM client certificate `file`, for listeners that ask for one (mTLS); implies --tls")
	fs.StringVar(&c.key, "tls-key", "", "PEM client key `file`, with --tls-cert")
	fs.StringVar(&c.mechanism, "sasl-mechanism", "", "SASL `mechanism` of a SASL listener: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	fs.StringVar(&c.user, "sasl-user", "", "SASL user `name`")
	fs.StringVar(&c.passw, "sasl-password", "", "SASL password (env COHORT_SASL_PASSWORD keeps it out of the process list)")
}

// opts are the client options the flags ask for.
func (c *clientSecurity) opts() ([]kgo.Opt, error) {
	var out []kgo.Opt
	if c.tls || c.ca != "" || c.cert != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.ca != "" {
			b, err := os.ReadFile(c.ca)
			if err != nil {
				return nil, fmt.Errorf("--tls-ca: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(b) {
				return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", c.ca)
			}
		}
		if c.cert != "" || c.key != "" {
			pair, err := tls.LoadX509KeyPair(c.cert, c.key)
			if err != nil {
				return nil, fmt.Errorf("--tls-cert and --tls-key: %w", err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		out = append(out, kgo.DialTLSConfig(cfg))
	}
	if c.mechanism == "" {
		if c.user != "" {
			return nil, fmt.Errorf("--sasl-user needs --sasl-mechanism")
		}
		return out, nil
	}
	if c.user == "" {
		return nil, fmt.Errorf("--sasl-mechanism needs --sasl-user and --sasl-password")
	}
	var m sasl.Mechanism
	switch strings.ToUpper(c.mechanism) {
	case "PLAIN":
		m = plain.Auth{User: c.user, Pass: c.passw}.AsMechanism()
	case "SCRAM-SHA-256":
		m = scram.Auth{User: c.user, Pass: c.passw}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		m = scram.Auth{User: c.user, Pass: c.passw}.AsSha512Mechanism()
	default:
		return nil, fmt.Errorf("--sasl-mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", c.mechanism)
	}
	return append(out, kgo.SASL(m)), nil
}
