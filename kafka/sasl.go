package kafka

// The SASL exchange of a SASL_PLAINTEXT or SASL_SSL listener, as Kafka's
// SaslServerAuthenticator runs it, and the TLS handshake of a TLS one.
//
// A SASL connection starts unauthenticated. Until SaslHandshake it
// accepts ApiVersions (so that clients learn the versions first) and
// SaslHandshake; anything else closes the connection without an answer
// (Kafka's InvalidRequestException: "Unexpected Kafka request of type X
// during SASL handshake"). After SaslHandshake v1 it accepts only
// SaslAuthenticate, whose tokens carry the exchange; another request is
// answered ILLEGAL_SASL_STATE (where its response has an error code) and
// the connection closes. After SaslHandshake v0 the tokens come as bare
// size-prefixed frames, answered the same way. Once the mechanism says
// the client is who it claims, the connection carries that principal
// and serves every API.
//
// Every failure (an unsupported mechanism, a wrong password, an unknown
// user, a request out of turn after the handshake) is answered after
// Config.FailedAuthenticationDelay and the connection closed, as Kafka's
// connection.failed.authentication.delay.ms: the delay is the
// connection's writer waiting, so no other connection waits with it.
//
// KIP-368: with Config.SessionLifetime, SaslAuthenticate v1+ answers the
// session's lifetime, and a client that used v1+ may re-authenticate on
// the same connection (SaslHandshake then SaslAuthenticate, the same
// mechanism and the same principal, or the connection closes). Once the
// session has ended, any request but that SaslHandshake closes the
// connection, as Kafka's SocketServer closes an expired channel.

import (
	"context"
	"crypto/tls"
	"fmt"
	"reflect"
	"time"

	"github.com/cohort-dev/cohort/security"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.SASLHandshake, 0, 1, handleSaslHandshake)
	register(kmsg.SASLAuthenticate, 0, 2, handleSaslAuthenticate)
}

// saslStep is where a connection's SASL exchange is.
type saslStep int

const (
	// stepHandshake: ApiVersions or SaslHandshake expected.
	stepHandshake saslStep = iota
	// stepAuthenticate: SaslAuthenticate expected (handshake v1).
	stepAuthenticate
	// stepRawToken: a bare token expected (handshake v0).
	stepRawToken
	// stepDone: authenticated.
	stepDone
	// stepFailed: the connection is closing.
	stepFailed
)

// saslState is a connection's SASL exchange. Only its reader touches it.
type saslState struct {
	step      saslStep
	mechanism string
	exchange  security.Exchange
	// reauthOK is set once the client used SaslAuthenticate v1+: it
	// knows of KIP-368 and may re-authenticate.
	reauthOK bool
	// reauth is set while a re-authentication runs; badMechanism is
	// the message its failure gives when it asked for another mechanism.
	reauth       bool
	badMechanism string
	// expires is when the session ends (zero: never).
	expires time.Time
}

// gateVerdict is what the SASL gate decided for a frame.
type gateVerdict int

const (
	gatePass     gateVerdict = iota // decode and dispatch as usual
	gateAnswered                    // answered by the gate: enqueue its pending
	gateClose                       // close the connection, no answer
)

// gate runs a frame of a SASL connection through its exchange: it lets
// through what the step allows (the handlers of SaslHandshake and
// SaslAuthenticate then move the exchange on), answers a bare token or a
// request out of turn, or closes.
func (c *conn) gate(frame []byte, received time.Time) (pending, gateVerdict) {
	a := c.sess.sasl
	if a.step == stepRawToken {
		return c.rawToken(frame), gateAnswered
	}
	if len(frame) < 4 {
		return pending{}, gateClose
	}
	key := int16(uint16(frame[0])<<8 | uint16(frame[1]))
	switch a.step {
	case stepDone:
		if key == kmsg.SASLHandshake.Int16() && a.reauthOK {
			// KIP-368: a re-authentication begins, even after the
			// session ended.
			a.step, a.reauth = stepHandshake, true
			return pending{}, gatePass
		}
		if !a.expires.IsZero() && received.After(a.expires) {
			c.s.logger.Debug("closing connection: its SASL session ended", "remote", c.remote, "principal", c.sess.principal.String())
			return pending{}, gateClose
		}
		return pending{}, gatePass
	case stepHandshake:
		if key == kmsg.ApiVersions.Int16() || key == kmsg.SASLHandshake.Int16() {
			if a.reauth && key != kmsg.SASLHandshake.Int16() {
				break
			}
			return pending{}, gatePass
		}
	case stepAuthenticate:
		if key == kmsg.SASLAuthenticate.Int16() {
			return pending{}, gatePass
		}
		return c.illegalState(frame, received), gateAnswered
	}
	c.s.warn.Warn("closing connection: a request before SASL authentication", "remote", c.remote, "listener", c.sess.listener.Name, "api_key", key)
	return pending{}, gateClose
}

// illegalState answers a request other than SaslAuthenticate after
// SaslHandshake v1 with ILLEGAL_SASL_STATE where its response has an
// error code, as Kafka does, and closes the connection; a request whose
// response has none, or that does not decode, closes it unanswered.
func (c *conn) illegalState(frame []byte, received time.Time) pending {
	a := c.sess.sasl
	a.step = stepFailed
	c.s.authenticated(a.mechanism, false)
	hdr, body, err := parseHeader(frame)
	if err != nil {
		return pending{closeAfter: true, raw: c.s.delayed(c, nil)}
	}
	req := kmsg.RequestForKey(hdr.key)
	if req == nil || hdr.version < 0 || hdr.version > req.MaxVersion() {
		return pending{closeAfter: true, raw: c.s.delayed(c, nil)}
	}
	req.SetVersion(hdr.version)
	if req.IsFlexible() {
		if body, err = skipTags(body); err != nil {
			return pending{closeAfter: true, raw: c.s.delayed(c, nil)}
		}
	}
	resp := req.ResponseKind()
	if req.ReadFrom(body) != nil || !setErrorCode(resp, kerr.IllegalSaslState.Code) {
		return pending{closeAfter: true, raw: c.s.delayed(c, nil)}
	}
	hdr.sess = &c.sess
	p := pending{hdr: hdr, respVersion: hdr.version, ctx: c.sess.ctx, closeAfter: true}
	c.s.received(&p, req, len(frame), received)
	p.respond = c.s.delayedResponse(c, resp)
	return p
}

// setErrorCode sets a response's top-level ErrorCode, if it has one.
func setErrorCode(resp kmsg.Response, code int16) bool {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	f := v.Elem().FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 || !f.CanSet() {
		return false
	}
	f.SetInt(int64(code))
	return true
}

// rawToken runs one bare token of an exchange begun with SaslHandshake
// v0 and answers it with the mechanism's bare token; a failure closes
// the connection after the delay without an answer, as Kafka.
func (c *conn) rawToken(token []byte) pending {
	a := c.sess.sasl
	out, err := a.exchange.Step(token)
	if err == nil && a.exchange.Done() {
		err = c.s.completeAuth(&c.sess, time.Now())
	}
	if err != nil {
		c.s.logger.Debug("sasl authentication failed", "remote", c.remote, "mechanism", a.mechanism, "err", err)
		a.step = stepFailed
		c.s.authenticated(a.mechanism, false)
		return pending{closeAfter: true, raw: c.s.delayed(c, nil)}
	}
	if out == nil {
		out = []byte{}
	}
	return pending{raw: func() []byte { return out }}
}

// completeAuth makes the exchange's principal the connection's, checking
// that a re-authentication keeps it, and starts the session's lifetime.
// It returns the failure to report.
func (s *Server) completeAuth(ss *session, now time.Time) error {
	a := ss.sasl
	p := a.exchange.Principal()
	if a.reauth && p != ss.principal {
		return &security.AuthError{Msg: fmt.Sprintf("Cannot change principals during re-authentication from %s: %s", ss.principal, p)}
	}
	ss.setPrincipal(p)
	a.step, a.reauth, a.exchange = stepDone, false, nil
	a.expires = time.Time{}
	if s.cfg.SessionLifetime > 0 {
		a.expires = now.Add(s.cfg.SessionLifetime)
	}
	s.authenticated(a.mechanism, true)
	return nil
}

// authenticated reports an authentication's outcome.
func (s *Server) authenticated(mechanism string, ok bool) {
	if s.cfg.OnAuthentication != nil {
		s.cfg.OnAuthentication(mechanism, ok)
	}
}

// wait blocks for the failed-authentication delay, or until the server
// shuts down or the connection closes.
func (s *Server) wait(c *conn) {
	d := s.cfg.FailedAuthenticationDelay
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.closing:
	case <-c.gone:
	}
}

// delayed is a raw answer written after the failed-authentication delay.
func (s *Server) delayed(c *conn, tok []byte) func() []byte {
	return func() []byte { s.wait(c); return tok }
}

// delayedResponse is a response written after the delay.
func (s *Server) delayedResponse(c *conn, resp kmsg.Response) func() kmsg.Response {
	return func() kmsg.Response { s.wait(c); return resp }
}

// failAuth ends a SASL exchange in failure from a handler: the response
// goes after the delay and the connection closes.
func (s *Server) failAuth(hdr *reqHeader, resp kmsg.Response) func() kmsg.Response {
	a := hdr.sess.sasl
	a.step = stepFailed
	s.authenticated(a.mechanism, false)
	hdr.closeAfter = true
	c := hdr.sess.conn
	if c == nil {
		return done(resp)
	}
	return s.delayedResponse(c, resp)
}

// SaslHandshake, key 17.
//
// Version notes:
//   - v0: the mechanism; the exchange's tokens then go as bare frames.
//   - v1 (KIP-152): the tokens go in SaslAuthenticate requests.
//
// On a listener without SASL, and on a connection already authenticated
// that may not re-authenticate, Kafka's KafkaApis answers
// ILLEGAL_SASL_STATE; so does Cohort. An unsupported mechanism is
// UNSUPPORTED_SASL_MECHANISM, with the enabled ones, and closes the
// connection after the failed-authentication delay.
func handleSaslHandshake(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if hdr.sess == nil || hdr.sess.sasl == nil || hdr.sess.sasl.step != stepHandshake {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return done(resp)
	}
	a := hdr.sess.sasl
	resp.SupportedMechanisms = s.cfg.SASL.Mechanisms()
	if !s.cfg.SASL.Enabled(req.Mechanism) {
		a.mechanism = req.Mechanism
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return s.failAuth(hdr, resp)
	}
	if a.reauth && req.Mechanism != a.mechanism {
		// As Kafka: the handshake succeeds, the exchange then fails.
		a.badMechanism = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", req.Mechanism, a.mechanism)
	}
	ex, err := s.cfg.SASL.Start(req.Mechanism)
	if err != nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return s.failAuth(hdr, resp)
	}
	if a.badMechanism == "" {
		a.mechanism = req.Mechanism
	}
	a.exchange = ex
	a.step = stepAuthenticate
	if hdr.version == 0 {
		a.step = stepRawToken
	}
	return done(resp)
}

// SaslAuthenticate, key 36.
//
// Version notes:
//   - v0 (KIP-152): the token in, the token out, an error code and
//     message.
//   - v1 (KIP-368): SessionLifetimeMs: how long the session holds
//     (Config.SessionLifetime; 0: for ever). A client that sends v1+
//     may re-authenticate.
//   - v2: flexible.
//
// A failure is SASL_AUTHENTICATION_FAILED with Kafka's messages: for
// SCRAM, "Authentication failed during authentication due to invalid
// credentials with SASL mechanism M" (nothing that tells whether the
// user exists), for PLAIN its own. Outside an exchange (a listener
// without SASL, or after authentication) it is ILLEGAL_SASL_STATE, as
// Kafka's KafkaApis answers.
func handleSaslAuthenticate(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if hdr.sess == nil || hdr.sess.sasl == nil || hdr.sess.sasl.step != stepAuthenticate {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = errPtr("SaslAuthenticate request received after successful authentication")
		return done(resp)
	}
	a := hdr.sess.sasl
	if hdr.version > 0 {
		a.reauthOK = true
	}
	what := "authentication"
	if a.reauth {
		what = "re-authentication"
	}
	fail := func(err error) func() kmsg.Response {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := fmt.Sprintf("Authentication failed during %s due to invalid credentials with SASL mechanism %s", what, a.mechanism)
		if ae, ok := err.(*security.AuthError); ok {
			msg = ae.Msg
		}
		resp.ErrorMessage = &msg
		s.logger.Debug("sasl authentication failed", "client_host", hdr.host, "mechanism", a.mechanism, "err", err)
		return s.failAuth(hdr, resp)
	}
	if a.badMechanism != "" {
		return fail(&security.AuthError{Msg: a.badMechanism})
	}
	out, err := a.exchange.Step(req.SASLAuthBytes)
	if err != nil {
		return fail(err)
	}
	resp.SASLAuthBytes = out
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	if a.exchange.Done() {
		if err := s.completeAuth(hdr.sess, time.Now()); err != nil {
			return fail(err)
		}
		resp.SessionLifetimeMillis = s.cfg.SessionLifetime.Milliseconds()
	}
	return done(resp)
}

// handshake runs a TLS connection's handshake, within
// RequestReadTimeout, and takes the principal of its verified client
// certificate (an SSL listener's; on SASL_SSL the SASL user is the
// principal, as in Kafka). It returns false if the handshake failed.
func (c *conn) handshake(tc *tls.Conn) bool {
	timeout := c.s.cfg.RequestReadTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.s.warn.Warn("closing connection: TLS handshake failed", "remote", c.remote, "listener", c.sess.listener.Name, "err", err)
		return false
	}
	c.touch()
	if c.sess.sasl == nil {
		c.sess.setPrincipal(security.PeerPrincipal(tc.ConnectionState()))
	}
	return true
}
