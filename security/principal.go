// Package security holds what Cohort's listeners need to know who a
// client is: Kafka's listener syntax and security protocols, TLS server
// configuration with certificates reloaded in place, SASL mechanisms
// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and the salted SCRAM credentials
// they check, kept as records in the store.
//
// It authenticates; it must not authorize. A later layer reads the
// Principal a connection carries and decides what it may do.
package security

import (
	"context"
	"crypto/x509"
	"strings"
)

// Principal is who a connection acts for, as Kafka's KafkaPrincipal: a
// type and a name, written "User:alice".
type Principal struct {
	Type string
	Name string
}

// UserType is the principal type of every principal Cohort makes, as
// Kafka's default principal builder.
const UserType = "User"

// Anonymous is the principal of a connection nothing authenticated: a
// PLAINTEXT listener, or an SSL one whose client sent no certificate
// (Kafka's KafkaPrincipal.ANONYMOUS).
var Anonymous = Principal{Type: UserType, Name: "ANONYMOUS"}

// User is the principal of an authenticated user name.
func User(name string) Principal { return Principal{Type: UserType, Name: name} }

// String is Kafka's form, "User:alice".
func (p Principal) String() string { return p.Type + ":" + p.Name }

// IsAnonymous reports whether p is Anonymous.
func (p Principal) IsAnonymous() bool { return p == Anonymous }

// FromCertificate is the principal of a TLS client certificate as Kafka's
// default ssl.principal.mapping.rules (DEFAULT) makes it: "User:" and the
// subject's distinguished name in RFC 2253 form, most specific attribute
// first ("CN=alice,OU=eng,O=Acme,C=US"), as Java's X500Principal.getName()
// writes it. Attribute types Go does not name (Java names DC and UID too)
// come out as dotted OIDs with hex values.
func FromCertificate(cert *x509.Certificate) Principal {
	return User(strings.TrimSpace(cert.Subject.String()))
}

// principalKey is the context key of a request's principal.
type principalKey struct{}

// WithPrincipal returns ctx carrying p: every listener (Kafka, gRPC,
// admin HTTP) hands its requests' handlers a context with the principal
// of the connection or call, for a later authorization layer to read.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal WithPrincipal put in ctx, or
// Anonymous.
func PrincipalFrom(ctx context.Context) Principal {
	if p, ok := ctx.Value(principalKey{}).(Principal); ok {
		return p
	}
	return Anonymous
}
