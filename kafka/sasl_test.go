package kafka_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

var saslUsers = map[string]string{"alice": "alice-pw", "bob": "bob-pw"}

// saslNode starts a node with every listener, users alice and bob, and
// its metrics served.
func saslNode(t *testing.T, cfg node.Config) *testkit.SecureNode {
	t.Helper()
	cfg.HTTPListen, cfg.AutoCreateTopics = "127.0.0.1:0", true
	return testkit.StartSecureNode(t, cfg, saslUsers)
}

func handshake(t *testing.T, c *rawClient, v int16, mech string) *kmsg.SASLHandshakeResponse {
	t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Mechanism = mech
	return roundTrip[*kmsg.SASLHandshakeResponse](c, v, req)
}

func plainToken(user, pass string) []byte { return []byte("\x00" + user + "\x00" + pass) }

func authenticate(t *testing.T, c *rawClient, v int16, token []byte) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SASLAuthBytes = token
	return roundTrip[*kmsg.SASLAuthenticateResponse](c, v, req)
}

// authFailures reads cohort_sasl_authentications_total{mechanism,result}.
func authCount(t *testing.T, n *testkit.SecureNode, mech, result string) int {
	t.Helper()
	resp, err := http.Get("http://" + n.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	want := fmt.Sprintf(`cohort_sasl_authentications_total{mechanism=%q,result=%q} `, mech, result)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			var n int
			fmt.Sscan(v, &n)
			return n
		}
	}
	t.Fatalf("no %s in /metrics", want)
	return 0
}

// TestSASLSkippingHandshake: on a SASL listener a request before
// SaslHandshake (a Metadata, or a SaslAuthenticate) closes the connection
// unanswered, as Kafka's SaslServerAuthenticator does
// (InvalidRequestException); ApiVersions is answered.
func TestSASLSkippingHandshake(t *testing.T) {
	n := saslNode(t, node.Config{})
	for _, req := range []kmsg.Request{kmsg.NewPtrMetadataRequest(), kmsg.NewPtrSASLAuthenticateRequest(), kmsg.NewPtrFindCoordinatorRequest()} {
		t.Run(kmsg.NameForKey(req.Key()), func(t *testing.T) {
			c := dial(t, n.Addr("SASL_PLAINTEXT"))
			c.expectOpen() // ApiVersions first is fine
			req.SetVersion(1)
			c.send(req)
			c.expectClosed(ioTimeout)
		})
	}
}

// TestSASLRequestDuringExchange: after SaslHandshake v1, any request but
// SaslAuthenticate is answered ILLEGAL_SASL_STATE (after the failed
// authentication delay) and the connection closes.
func TestSASLRequestDuringExchange(t *testing.T) {
	n := saslNode(t, node.Config{FailedAuthenticationDelay: time.Millisecond})
	c := dial(t, n.Addr("SASL_PLAINTEXT"))
	if r := handshake(t, c, 1, "PLAIN"); r.ErrorCode != 0 || len(r.SupportedMechanisms) != 3 {
		t.Fatalf("handshake: %+v", r)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	resp := roundTrip[*kmsg.FindCoordinatorResponse](c, 3, fc)
	wantCode(t, "find coordinator during the exchange", resp.ErrorCode, kerr.IllegalSaslState)
	c.expectClosed(ioTimeout)
}

// TestSASLExchange: ApiVersions, SaslHandshake and SaslAuthenticate with
// PLAIN at every version, then the connection serves other APIs; an
// unsupported mechanism is UNSUPPORTED_SASL_MECHANISM and closes.
func TestSASLExchange(t *testing.T) {
	n := saslNode(t, node.Config{FailedAuthenticationDelay: time.Millisecond})
	for v := int16(0); v <= 2; v++ {
		c := dial(t, n.Addr("SASL_PLAINTEXT"))
		c.expectOpen()
		wantCode(t, "handshake", handshake(t, c, 1, "PLAIN").ErrorCode, nil)
		r := authenticate(t, c, v, plainToken("alice", saslUsers["alice"]))
		wantCode(t, fmt.Sprintf("authenticate v%d", v), r.ErrorCode, nil)
		if r.SessionLifetimeMillis != 0 {
			t.Errorf("session lifetime %d, want 0 (none configured)", r.SessionLifetimeMillis)
		}
		roundTrip[*kmsg.MetadataResponse](c, 12, kmsg.NewPtrMetadataRequest())
		// Authenticated: the SASL APIs are out of turn now (KafkaApis).
		wantCode(t, "authenticate again", authenticate(t, c, v, nil).ErrorCode, kerr.IllegalSaslState)
	}
	c := dial(t, n.Addr("SASL_SSL")) // TCP only: the handshake never starts
	c.nc.Close()

	c = dial(t, n.Addr("SASL_PLAINTEXT"))
	r := handshake(t, c, 1, "GSSAPI")
	wantCode(t, "handshake GSSAPI", r.ErrorCode, kerr.UnsupportedSaslMechanism)
	if strings.Join(r.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" {
		t.Errorf("mechanisms %v", r.SupportedMechanisms)
	}
	c.expectClosed(ioTimeout)

	c = dial(t, n.Addr("SASL_PLAINTEXT"))
	handshake(t, c, 1, "PLAIN")
	r2 := authenticate(t, c, 2, plainToken("alice", "nope"))
	wantCode(t, "wrong password", r2.ErrorCode, kerr.SaslAuthenticationFailed)
	if r2.ErrorMessage == nil || *r2.ErrorMessage != "Authentication failed: Invalid username or password" {
		t.Errorf("message %v", r2.ErrorMessage)
	}
	c.expectClosed(ioTimeout)
}

// TestSASLHandshakeV0: after SaslHandshake v0 the tokens go as bare
// size-prefixed frames (no Kafka header), as Kafka's pre-KIP-152 clients
// send them; a failure closes the connection without an answer.
func TestSASLHandshakeV0(t *testing.T) {
	n := saslNode(t, node.Config{FailedAuthenticationDelay: time.Millisecond})
	raw := func(c *rawClient, tok []byte) {
		c.write(binary.BigEndian.AppendUint32(nil, uint32(len(tok))))
		c.write(tok)
	}
	c := dial(t, n.Addr("SASL_PLAINTEXT"))
	wantCode(t, "handshake v0", handshake(t, c, 0, "PLAIN").ErrorCode, nil)
	raw(c, plainToken("bob", saslUsers["bob"]))
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil || binary.BigEndian.Uint32(size[:]) != 0 {
		t.Fatalf("bare answer to a PLAIN token: %v %v, want an empty token", size, err)
	}
	c.expectOpen()

	c = dial(t, n.Addr("SASL_PLAINTEXT"))
	handshake(t, c, 0, "PLAIN")
	raw(c, plainToken("bob", "wrong"))
	c.expectClosed(ioTimeout)
}

// TestFailedAuthenticationDelay: wrong passwords at a high rate are each
// answered only after --failed-authentication-delay, and meanwhile other
// clients are served as usual: a franz-go client authenticates, produces
// and commits while every failed connection is still waiting for its
// answer. No timing thresholds: the delay is an hour, and the check is
// that the failures are counted, the good client finished, and no bad
// connection has its answer yet.
func TestFailedAuthenticationDelay(t *testing.T) {
	n := saslNode(t, node.Config{FailedAuthenticationDelay: time.Hour})
	const bad = 32
	var conns []*rawClient
	for range bad {
		c := dial(t, n.Addr("SASL_PLAINTEXT"))
		wantCode(t, "handshake", handshake(t, c, 1, "PLAIN").ErrorCode, nil)
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = plainToken("alice", "guess")
		req.SetVersion(2)
		c.send(req)
		conns = append(conns, c)
	}
	testkit.Eventually(t, 30*time.Second, "the failures counted", func() bool {
		return authCount(t, n, "PLAIN", "failure") == bad
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr("SASL_PLAINTEXT")),
		kgo.SASL(scram.Auth{User: "alice", Pass: saslUsers["alice"]}.AsSha512Mechanism()),
		kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "delay", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce while bad logins wait: %v", err)
	}
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "delay", Partition: 0, At: 1})
	if r, err := adm.CommitOffsets(ctx, "delay-group", offs); err != nil || r.Error() != nil {
		t.Fatalf("commit while bad logins wait: %v %v", err, r.Error())
	}
	for i, c := range conns {
		_, _, err := c.readFrame(time.Millisecond)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("bad connection %d: %v, want no answer yet", i, err)
		}
	}
	// franz-go opens a connection per purpose (metadata, produce,
	// group), each authenticated.
	if got := authCount(t, n, "SCRAM-SHA-512", "success"); got < 1 {
		t.Errorf("%d SCRAM-SHA-512 successes, want some", got)
	}
}

// TestSASLSessionLifetime (KIP-368): SaslAuthenticate v1+ answers the
// session lifetime; a client that re-authenticates keeps its connection
// (franz-go does it by itself), one that does not is closed at its first
// request after the session ended, and a re-authentication as another
// user fails and closes.
func TestSASLSessionLifetime(t *testing.T) {
	n := saslNode(t, node.Config{SASLSessionLifetime: 300 * time.Millisecond, FailedAuthenticationDelay: time.Millisecond})

	c := dial(t, n.Addr("SASL_PLAINTEXT"))
	handshake(t, c, 1, "PLAIN")
	if r := authenticate(t, c, 1, plainToken("alice", saslUsers["alice"])); r.ErrorCode != 0 || r.SessionLifetimeMillis != 300 {
		t.Fatalf("authenticate: %+v, want a 300 ms session", r)
	}
	closed := false
	deadline := time.Now().Add(30 * time.Second)
	for !closed && time.Now().Before(deadline) {
		b, corr := c.frame(at(0, kmsg.NewPtrApiVersionsRequest()))
		c.write(b)
		got, _, err := c.readFrame(ioTimeout)
		switch {
		case err != nil:
			closed = true
		case got != corr:
			t.Fatalf("correlation %d, want %d", got, corr)
		default:
			time.Sleep(20 * time.Millisecond) // the next request, a little later
		}
	}
	if !closed {
		t.Fatal("the connection outlived its session")
	}

	c = dial(t, n.Addr("SASL_PLAINTEXT"))
	handshake(t, c, 1, "PLAIN")
	wantCode(t, "authenticate", authenticate(t, c, 2, plainToken("alice", saslUsers["alice"])).ErrorCode, nil)
	wantCode(t, "re-handshake", handshake(t, c, 1, "PLAIN").ErrorCode, nil)
	wantCode(t, "re-authenticate", authenticate(t, c, 2, plainToken("alice", saslUsers["alice"])).ErrorCode, nil)
	wantCode(t, "re-handshake", handshake(t, c, 1, "PLAIN").ErrorCode, nil)
	r := authenticate(t, c, 2, plainToken("bob", saslUsers["bob"]))
	wantCode(t, "re-authenticate as bob", r.ErrorCode, kerr.SaslAuthenticationFailed)
	if r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "Cannot change principals") {
		t.Errorf("message %v", r.ErrorMessage)
	}
	c.expectClosed(ioTimeout)

	before := authCount(t, n, "SCRAM-SHA-256", "success")
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr("SASL_PLAINTEXT")),
		kgo.SASL(scram.Auth{User: "bob", Pass: saslUsers["bob"]}.AsSha256Mechanism()),
		kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; authCount(t, n, "SCRAM-SHA-256", "success") < before+4; i++ {
		if ctx.Err() != nil {
			t.Fatal("franz-go did not re-authenticate")
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "reauth", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("produce %d across re-authentications: %v", i, err)
		}
	}
}
