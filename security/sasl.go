package security

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/xdg-go/scram"
)

// PLAIN is the SASL/PLAIN mechanism's name (RFC 4616).
const PLAIN = "PLAIN"

// SASL authenticates SASL exchanges against Credentials.
type SASL struct {
	creds      *Credentials
	mechanisms []string
	servers    map[Mechanism]*scram.Server
}

// AuthError is an exchange that failed for a reason the client may be
// told (Kafka's SaslAuthenticationException): its message goes into the
// SaslAuthenticate response. Anything else an exchange returns is a
// failure too, reported with a generic message, as Kafka does for what
// might reveal whether a user exists.
type AuthError struct{ Msg string }

func (e *AuthError) Error() string { return e.Msg }

// NewSASL serves the named mechanisms (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512; all three when names is empty) from creds.
func NewSASL(creds *Credentials, names []string) (*SASL, error) {
	if len(names) == 0 {
		names = []string{PLAIN, ScramSHA256.Name(), ScramSHA512.Name()}
	}
	s := &SASL{creds: creds, servers: map[Mechanism]*scram.Server{}}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if n == PLAIN {
			s.mechanisms = append(s.mechanisms, n)
			continue
		}
		m, ok := MechanismByName(n)
		if !ok {
			return nil, fmt.Errorf("sasl mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", n)
		}
		hashFn := scram.SHA256
		if m == ScramSHA512 {
			hashFn = scram.SHA512
		}
		srv, err := hashFn.NewServer(s.lookup(m))
		if err != nil {
			return nil, err
		}
		s.servers[m] = srv.WithNonceGenerator(serverNonce)
		s.mechanisms = append(s.mechanisms, n)
	}
	return s, nil
}

// Mechanisms are the enabled mechanisms, as SaslHandshake lists them.
func (s *SASL) Mechanisms() []string { return s.mechanisms }

// Enabled reports whether the mechanism is served.
func (s *SASL) Enabled(name string) bool {
	for _, m := range s.mechanisms {
		if m == name {
			return true
		}
	}
	return false
}

func (s *SASL) lookup(m Mechanism) scram.CredentialLookup {
	return func(user string) (scram.StoredCredentials, error) {
		c, ok, err := s.creds.Get(user, m)
		if err != nil {
			return scram.StoredCredentials{}, err
		}
		if !ok {
			return scram.StoredCredentials{}, errors.New("unknown user")
		}
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: int(c.Iterations)},
			StoredKey:  c.StoredKey,
			ServerKey:  c.ServerKey,
		}, nil
	}
}

// Exchange is one client's authentication with one mechanism: tokens in,
// challenges out, until Done.
type Exchange interface {
	// Step takes the client's next token and returns the server's
	// answer. An error fails the authentication.
	Step(token []byte) ([]byte, error)
	// Done reports whether the exchange succeeded: the client is
	// authenticated as Principal.
	Done() bool
	// Principal is the authenticated principal once Done.
	Principal() Principal
}

// Start begins an exchange with an enabled mechanism.
func (s *SASL) Start(mechanism string) (Exchange, error) {
	if !s.Enabled(mechanism) {
		return nil, fmt.Errorf("sasl mechanism %q is not enabled", mechanism)
	}
	if mechanism == PLAIN {
		return &plainExchange{s: s}, nil
	}
	m, _ := MechanismByName(mechanism)
	return &scramExchange{s: s, m: m, conv: s.servers[m].NewConversation()}, nil
}

// plainExchange is SASL/PLAIN: one token, authzid NUL authcid NUL passwd,
// checked against the user's SCRAM credentials (the strongest first), as
// Kafka's PlainServerCallbackHandler checks its JAAS users.
type plainExchange struct {
	s    *SASL
	user string
	done bool
}

func (e *plainExchange) Step(token []byte) ([]byte, error) {
	if e.done {
		return nil, &AuthError{"Authentication failed: the exchange is complete"}
	}
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return nil, &AuthError{"Invalid SASL/PLAIN response: expected 3 tokens, got " + fmt.Sprint(len(parts))}
	}
	authz, user, pass := string(parts[0]), string(parts[1]), string(parts[2])
	switch {
	case user == "":
		return nil, &AuthError{"Authentication failed: username not specified"}
	case pass == "":
		return nil, &AuthError{"Authentication failed: password not specified"}
	case authz != "" && authz != user:
		return nil, &AuthError{"Authentication failed: Client requested an authorization id that is different from username"}
	}
	ok, err := e.s.creds.CheckPassword(user, pass)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &AuthError{"Authentication failed: Invalid username or password"}
	}
	e.user, e.done = user, true
	return nil, nil
}

func (e *plainExchange) Done() bool           { return e.done }
func (e *plainExchange) Principal() Principal { return User(e.user) }

// scramExchange is SCRAM (RFC 5802) through xdg-go/scram's server
// conversation: client-first → server-first, client-final → server-final.
//
// One leniency, Kafka's: its ScramSaslServer accepts a client-final nonce
// that ends with the nonce it sent, not only one equal to it, and
// librdkafka 2.0 (Debian's kcat) relies on it, sending its own nonce
// again in front. xdg-go checks equality, as the RFC says, so a
// client-final whose nonce only ends with ours has its proof checked here
// (lenientFinal), against the same stored keys; every other message goes
// through the library.
type scramExchange struct {
	s    *SASL
	m    Mechanism
	conv *scram.ServerConversation
	// first and serverFirst are the exchange's first two messages,
	// nonce the full nonce sent; lenient is set when the final step was
	// checked here.
	first, serverFirst, nonce string
	lenient, lenientOK        bool
}

func (e *scramExchange) Step(token []byte) (_ []byte, err error) {
	// The client's bytes reach the library unchecked; a parser bug there
	// (v1.1.2 panicked on ",,,", found by FuzzSASL) fails this exchange,
	// not the connection's reader.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("scram: malformed message: %v", r)
		}
	}()
	msg := string(token)
	if e.serverFirst != "" && !e.lenient {
		if r, ok := attr(msg, "r"); ok && r != e.nonce && len(r) > len(e.nonce) && strings.HasSuffix(r, e.nonce) {
			return e.lenientFinal(msg)
		}
	}
	out, err := e.conv.Step(msg)
	if err != nil {
		return nil, err
	}
	if a := e.conv.AuthzID(); a != "" && a != e.conv.Username() {
		return nil, &AuthError{"Authentication failed: Client requested an authorization id that is different from username"}
	}
	if e.serverFirst == "" {
		e.first, e.serverFirst = msg, out
		e.nonce, _ = attr(out, "r")
	}
	return []byte(out), nil
}

// attr returns attribute k of a SCRAM message ("r=...,s=...").
func attr(msg, k string) (string, bool) {
	for _, f := range strings.Split(msg, ",") {
		if v, ok := strings.CutPrefix(f, k+"="); ok {
			return v, true
		}
	}
	return "", false
}

// lenientFinal checks a client-final message whose nonce ends with the
// one sent (Kafka's rule) and returns the server-final message.
func (e *scramExchange) lenientFinal(msg string) ([]byte, error) {
	e.lenient = true
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, errors.New("scram: client-final without a proof")
	}
	withoutProof := msg[:i]
	proof, err := base64.StdEncoding.DecodeString(msg[i+3:])
	if err != nil {
		return nil, errors.New("scram: proof is not base64")
	}
	// The channel binding must be the client-first message's GS2 header.
	parts := strings.SplitN(e.first, ",", 3)
	if len(parts) != 3 {
		return nil, errors.New("scram: malformed client-first")
	}
	cb, _ := attr(withoutProof, "c")
	if got, err := base64.StdEncoding.DecodeString(cb); err != nil || string(got) != parts[0]+","+parts[1]+"," {
		return nil, errors.New("scram: channel binding does not match")
	}
	cred, ok, err := e.s.creds.Get(e.conv.Username(), e.m)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("unknown user")
	}
	h := e.m.hash()
	mac := func(key []byte, s string) []byte {
		x := hmac.New(h, key)
		x.Write([]byte(s))
		return x.Sum(nil)
	}
	authMsg := parts[2] + "," + e.serverFirst + "," + withoutProof
	sig := mac(cred.StoredKey, authMsg)
	if len(proof) != len(sig) {
		return nil, errors.New("scram: proof has the wrong length")
	}
	clientKey := make([]byte, len(sig))
	for i := range sig {
		clientKey[i] = proof[i] ^ sig[i]
	}
	d := h()
	d.Write(clientKey)
	if !hmac.Equal(d.Sum(nil), cred.StoredKey) {
		return nil, errors.New("scram: challenge proof invalid")
	}
	e.lenientOK = true
	return []byte("v=" + base64.StdEncoding.EncodeToString(mac(cred.ServerKey, authMsg))), nil
}

func (e *scramExchange) Done() bool {
	if e.lenient {
		return e.lenientOK
	}
	return e.conv.Done() && e.conv.Valid()
}
func (e *scramExchange) Principal() Principal { return User(e.conv.Username()) }

// serverNonce is the server's part of a SCRAM nonce: 32 random letters
// and digits, as Kafka's ScramFormatter makes it (a base-36 number).
// xdg-go's default is base64, whose '+' and '/' librdkafka 2.0 (kcat's)
// mangles: its client-final message then carries another nonce and the
// exchange fails.
func serverNonce() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 32)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
