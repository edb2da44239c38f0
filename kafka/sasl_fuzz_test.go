package kafka

// FuzzSASL runs fuzzed SASL exchanges through a SASL connection's gate
// and the SaslHandshake and SaslAuthenticate handlers:
//
//	go test ./kafka -run '^$' -fuzz '^FuzzSASL$' -fuzztime 60s
//
// A handshake with a fuzzed mechanism (v0 or v1), two fuzzed tokens (in
// SaslAuthenticate requests of a fuzzed version, or bare after v0), then
// a fuzzed frame (only through the gate unless it is a SASL API or
// ApiVersions: the other handlers have FuzzRequest). The properties: nothing panics (decode's recover would
// report "handler panicked"); every response encodes and decodes at its
// version; and a connection is authenticated only by the one right PLAIN
// token: a SCRAM proof cannot be forged without the password, so no
// fuzzed input authenticates any other way. Its seed corpus is in
// testdata/fuzz/FuzzSASL (TestSASLFuzzSeedCorpus -update writes it).

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/globaltest"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/ratelog"
	"github.com/cohort-dev/cohort/security"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const fuzzPassword = "alice-pw"

var fuzzPlainToken = []byte("\x00alice\x00" + fuzzPassword)

func saslFuzzServer(tb testing.TB) *Server {
	creds := security.NewCredentials(globaltest.Start(tb, nil))
	var ch []security.Change
	for _, m := range security.Mechanisms {
		c := security.NewCredential(m, fuzzPassword, security.MinIterations)
		ch = append(ch, security.Change{User: "alice", Mechanism: m, Cred: &c})
	}
	if err := creds.Apply(ch); err != nil {
		tb.Fatal(err)
	}
	sasl, err := security.NewSASL(creds, nil)
	if err != nil {
		tb.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	return &Server{
		cfg:     Config{SASL: sasl, Credentials: creds, FailedAuthenticationDelay: -1, SessionLifetime: time.Minute},
		logger:  logger,
		warn:    ratelog.New(logger, 10, time.Second),
		obs:     observe.Nop{},
		closing: make(chan struct{}),
	}
}

// saslSeeds are the committed seeds: (mechanism, versions, tok1, tok2,
// next frame).
func saslSeeds() [][]any {
	scramFirst := []byte("n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL")
	scramFinal := []byte("c=biws,r=fyko+d2lbbFgONRv9qkxdawLserver,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	md := requestFrame(3, 12, kmsg.NewPtrMetadataRequest().AppendTo(nil))
	return [][]any{
		{"PLAIN", uint8(1 | 2<<1), fuzzPlainToken, []byte{}, md},
		{"PLAIN", uint8(1), []byte("\x00alice\x00wrong"), []byte{}, md},
		{"PLAIN", uint8(0), fuzzPlainToken, []byte{}, md},
		{"PLAIN", uint8(1), []byte("bob\x00alice\x00" + fuzzPassword), []byte{}, md},
		{"SCRAM-SHA-256", uint8(1 | 1<<1), scramFirst, scramFinal, md},
		{"SCRAM-SHA-512", uint8(1 | 2<<1), scramFirst, scramFinal, md},
		{"SCRAM-SHA-512", uint8(0), scramFirst, scramFinal, md},
		{"SCRAM-SHA-512", uint8(1), []byte("n,a=bob,n=alice,r=x"), []byte("garbage"), md},
		{"GSSAPI", uint8(1), []byte{0x60, 0x82}, []byte{}, md},
		{"", uint8(1), []byte{}, []byte{}, []byte{0, 36, 0, 2}},
	}
}

func FuzzSASL(f *testing.F) {
	s := saslFuzzServer(f)
	for _, seed := range saslSeeds() {
		f.Add(seed[0].(string), seed[1].(uint8), seed[2].([]byte), seed[3].([]byte), seed[4].([]byte))
	}
	f.Fuzz(func(t *testing.T, mech string, versions uint8, tok1, tok2, next []byte) {
		c := &conn{s: s, remote: "fuzz", gone: make(chan struct{})}
		c.ctx = context.Background()
		c.sess = session{conn: c, listener: &listener{Listener: Listener{Name: "SASL_PLAINTEXT", Protocol: security.SASLPlaintext}}, base: c.ctx, sasl: &saslState{}}
		c.sess.setPrincipal(security.Anonymous)
		hsVersion, authVersion := int16(versions&1), int16(versions>>1)%3
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = mech
		frames := [][]byte{requestFrame(17, hsVersion, hs.AppendTo(nil))}
		for _, tok := range [][]byte{tok1, tok2} {
			a := kmsg.NewPtrSASLAuthenticateRequest()
			a.SetVersion(authVersion)
			a.SASLAuthBytes = tok
			frames = append(frames, requestFrame(36, authVersion, a.AppendTo(nil)))
		}
		frames = append(frames, next)
		valid := mech == security.PLAIN && bytes.Equal(tok1, fuzzPlainToken)
		for i, frame := range frames {
			a := c.sess.sasl
			if a.step == stepFailed {
				return
			}
			if a.step == stepRawToken && (i == 1 || i == 2) {
				frame = [][]byte{tok1, tok2}[i-1]
				valid = mech == security.PLAIN && bytes.Equal(tok1, fuzzPlainToken)
			}
			p, v := c.gate(frame, time.Now())
			if v == gateClose {
				return
			}
			if v == gatePass {
				if len(frame) < 2 {
					return
				}
				if k := int16(frame[0])<<8 | int16(frame[1]); k != 17 && k != 18 && k != 36 {
					// Let through by the gate; the other handlers
					// need a whole server (FuzzRequest has one).
					return
				}
				var err error
				p, err = s.decode(c.sess.ctx, frame, "/127.0.0.1", time.Now(), &c.sess)
				if err != nil {
					if strings.Contains(err.Error(), "panicked") {
						t.Fatalf("frame %d: %v", i, err)
					}
					return
				}
			}
			answer(t, &p)
			if c.sess.sasl.step == stepDone && (!valid || c.sess.principal != security.User("alice")) {
				t.Fatalf("authenticated as %s by mechanism %q with tokens %q, %q", c.sess.principal, mech, tok1, tok2)
			}
			if p.closeAfter {
				return
			}
		}
	})
}

// answer runs a pending's response function and checks its encoding.
func answer(t *testing.T, p *pending) {
	t.Helper()
	if p.raw != nil {
		p.raw()
		return
	}
	if p.respond == nil {
		return
	}
	resp := p.respond()
	resp.SetVersion(p.respVersion)
	b := resp.AppendTo(nil)
	back := kmsg.ResponseForKey(p.hdr.key)
	back.SetVersion(p.respVersion)
	if err := back.ReadFrom(b); err != nil {
		t.Fatalf("%s v%d response does not decode: %v", kmsg.NameForKey(p.hdr.key), p.respVersion, err)
	}
}

// TestSASLFuzzSeedCorpus checks testdata/fuzz/FuzzSASL against saslSeeds;
// -update writes it.
func TestSASLFuzzSeedCorpus(t *testing.T) {
	for i, seed := range saslSeeds() {
		var b bytes.Buffer
		fmt.Fprintf(&b, "go test fuzz v1\nstring(%q)\nuint8(%d)\n", seed[0], seed[1])
		for _, v := range seed[2:] {
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		}
		c := corpusFile{target: "FuzzSASL", name: "seed-" + string(rune('a'+i)), content: b.Bytes()}
		path := filepath.Join("testdata", "fuzz", c.target, c.name)
		if updating() {
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, c.content, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, c.content) {
			t.Errorf("%s differs from its seed (go test ./kafka -run TestSASLFuzzSeedCorpus -update): %v", path, err)
		}
	}
}
