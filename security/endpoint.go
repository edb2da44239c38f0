package security

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Authentication of the admin HTTP listener and the gRPC assignment
// service: a caller is authenticated by a verified TLS client
// certificate (mTLS: its principal is User:<subject DN>, as on a Kafka
// SSL listener), by a bearer token (Authorization: Bearer <token>; its
// principal is User:<the name given with the token>), or, on the admin
// HTTP listener, by a SCRAM user's name and password (HTTP Basic, checked
// as SASL/PLAIN checks them), so that an organisation's users reach the
// API and the page with their Kafka credentials. Without a token
// configured, every caller is let in, as Anonymous unless it presented a
// certificate or a password: TLS with ClientAuthRequire is then what
// keeps strangers out. Basic credentials sent are always checked, token
// or not: a wrong password is refused, never taken as Anonymous.

// Token is a bearer token and the user name its callers act as, and
// optionally the passwords of HTTP Basic callers.
type Token struct {
	Secret string
	User   string
	// Passwords, if set, lets HTTP callers authenticate with a SCRAM
	// user's name and password (Authorization: Basic); nil: Basic is
	// not offered.
	Passwords *Credentials
	// FailedAuthenticationDelay delays the 401 of a wrong password by
	// this long, as the Kafka listeners delay a failed SASL exchange
	// (kafka.Config.FailedAuthenticationDelay): only that request
	// waits. Default 100 ms; negative: none.
	FailedAuthenticationDelay time.Duration
}

// AuthMethod is how an admin HTTP or gRPC caller authenticated.
type AuthMethod int

// The ways in.
const (
	// AuthOpen: no token is configured and the caller presented
	// nothing; its principal is Anonymous.
	AuthOpen AuthMethod = iota
	AuthCertificate
	AuthToken
	AuthBasic
)

type authMethodKey struct{}

// AuthMethodFrom returns how the caller whose request carries ctx
// authenticated (AuthOpen if nothing says).
func AuthMethodFrom(ctx context.Context) AuthMethod {
	m, _ := ctx.Value(authMethodKey{}).(AuthMethod)
	return m
}

// withCaller returns ctx carrying the caller's principal and method.
func withCaller(ctx context.Context, p Principal, m AuthMethod) context.Context {
	return context.WithValue(WithPrincipal(ctx, p), authMethodKey{}, m)
}

// errBadPassword is a Basic authentication that failed.
var errBadPassword = errors.New("invalid username or password")

// check returns the principal of a caller that presented tlsState (nil:
// not TLS) and the Authorization value auth, how it authenticated, and
// whether it may in (err non-nil: it may not; errBadPassword for a wrong
// password, to be delayed).
func (t Token) check(tlsState *tlsInfo, auth string) (Principal, AuthMethod, error) {
	if tlsState != nil && tlsState.principal != Anonymous {
		return tlsState.principal, AuthCertificate, nil
	}
	scheme, cred, _ := strings.Cut(auth, " ")
	if t.Passwords != nil && strings.EqualFold(scheme, "Basic") {
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
		user, pass, ok := strings.Cut(string(raw), ":")
		if err != nil || !ok || user == "" {
			return Anonymous, AuthOpen, errBadPassword
		}
		good, err := t.Passwords.CheckPassword(user, pass)
		if err != nil {
			return Anonymous, AuthOpen, err
		}
		if !good {
			return Anonymous, AuthOpen, errBadPassword
		}
		return User(user), AuthBasic, nil
	}
	if t.Secret == "" {
		return Anonymous, AuthOpen, nil
	}
	if strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(cred)), []byte(t.Secret)) == 1 {
		return User(t.User), AuthToken, nil
	}
	return Anonymous, AuthOpen, errNoCredentials
}

var errNoCredentials = errors.New("no valid credentials")

type tlsInfo struct{ principal Principal }

// HTTP wraps h so that only authenticated callers reach it, except on
// the paths in open (health probes, which orchestrators call without
// credentials). Others get 401 with a WWW-Authenticate challenge (Basic
// too when Passwords is set, so that a browser asks for them), after
// FailedAuthenticationDelay for a wrong password. The request's context
// carries the principal (PrincipalFrom) and how it authenticated
// (AuthMethodFrom).
func (t Token) HTTP(h http.Handler, open ...string) http.Handler {
	delay := t.FailedAuthenticationDelay
	if delay == 0 {
		delay = 100 * time.Millisecond
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ti *tlsInfo
		if r.TLS != nil {
			ti = &tlsInfo{principal: PeerPrincipal(*r.TLS)}
		}
		p, m, err := t.check(ti, r.Header.Get("Authorization"))
		if err != nil {
			for _, o := range open {
				if r.URL.Path == o {
					h.ServeHTTP(w, r)
					return
				}
			}
			msg := "authentication required: a bearer token (--admin-token) or a TLS client certificate"
			if t.Passwords != nil {
				msg = "authentication required: a bearer token (--admin-token), a TLS client certificate, or a SCRAM user's name and password (Basic)"
			}
			switch {
			case errors.Is(err, errBadPassword):
				msg = "authentication failed: invalid username or password"
				if delay > 0 {
					tm := time.NewTimer(delay)
					select {
					case <-tm.C:
					case <-r.Context().Done():
					}
					tm.Stop()
				}
			case !errors.Is(err, errNoCredentials):
				http.Error(w, "authentication: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
			if t.Passwords != nil {
				w.Header().Add("WWW-Authenticate", `Basic realm="cohort", charset="UTF-8"`)
			}
			if t.Secret != "" {
				w.Header().Add("WWW-Authenticate", `Bearer realm="cohort"`)
			}
			http.Error(w, msg, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r.WithContext(withCaller(r.Context(), p, m)))
	})
}

// grpcCheck authenticates a gRPC call.
func (t Token) grpcCheck(ctx context.Context, method string, open []string) (context.Context, error) {
	var ti *tlsInfo
	if pr, ok := peer.FromContext(ctx); ok {
		if info, ok := pr.AuthInfo.(credentials.TLSInfo); ok {
			ti = &tlsInfo{principal: PeerPrincipal(info.State)}
		}
	}
	auth := ""
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("authorization"); len(v) > 0 {
			auth = v[0]
		}
	}
	p, m, err := t.check(ti, auth)
	if err != nil {
		for _, o := range open {
			if strings.HasPrefix(method, o) {
				return ctx, nil
			}
		}
		return ctx, status.Error(codes.Unauthenticated, "authentication required: a bearer token (--grpc-token) or a TLS client certificate")
	}
	return withCaller(ctx, p, m), nil
}

// GRPC returns server options that authenticate every call, except
// those of the services whose full method names start with one of open
// (gRPC health checking, for probes).
func (t Token) GRPC(open ...string) []grpc.ServerOption {
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		ctx, err := t.grpcCheck(ctx, info.FullMethod, open)
		if err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		ctx, err := t.grpcCheck(ss.Context(), info.FullMethod, open)
		if err != nil {
			return err
		}
		return h(srv, &principalStream{ServerStream: ss, ctx: ctx})
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}
}

type principalStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *principalStream) Context() context.Context { return s.ctx }

// BearerCredentials are per-call gRPC credentials sending a bearer token:
// for clients of the assignment service (a node relaying a call to the
// node that serves it). requireTLS refuses to send it in the clear.
type BearerCredentials struct {
	Secret     string
	RequireTLS bool
}

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b BearerCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.Secret}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials.
func (b BearerCredentials) RequireTransportSecurity() bool { return b.RequireTLS }
