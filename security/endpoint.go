package security

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

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
// SSL listener) or by a bearer token (Authorization: Bearer <token>; its
// principal is User:<the name given with the token>). Without a token
// configured, every caller is let in, as Anonymous unless it presented a
// certificate: TLS with ClientAuthRequire is then what keeps strangers
// out.

// Token is a bearer token and the user name its callers act as.
type Token struct {
	Secret string
	User   string
}

// check returns the principal of a caller that presented tlsState (nil:
// not TLS) and the Authorization value auth, and whether it may in.
func (t Token) check(tlsState *tlsInfo, auth string) (Principal, bool) {
	if tlsState != nil && tlsState.principal != Anonymous {
		return tlsState.principal, true
	}
	if t.Secret == "" {
		return Anonymous, true
	}
	scheme, tok, ok := strings.Cut(auth, " ")
	if ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(t.Secret)) == 1 {
		return User(t.User), true
	}
	return Anonymous, false
}

type tlsInfo struct{ principal Principal }

// HTTP wraps h so that only authenticated callers reach it, except on
// the paths in open (health probes, which orchestrators call without
// credentials). Others get 401 with a WWW-Authenticate challenge. The
// request's context carries the principal (PrincipalFrom).
func (t Token) HTTP(h http.Handler, open ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ti *tlsInfo
		if r.TLS != nil {
			ti = &tlsInfo{principal: PeerPrincipal(*r.TLS)}
		}
		p, ok := t.check(ti, r.Header.Get("Authorization"))
		if !ok {
			for _, o := range open {
				if r.URL.Path == o {
					h.ServeHTTP(w, r)
					return
				}
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="cohort"`)
			http.Error(w, "authentication required: a bearer token (--admin-token) or a TLS client certificate", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
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
	p, ok := t.check(ti, auth)
	if !ok {
		for _, o := range open {
			if strings.HasPrefix(method, o) {
				return ctx, nil
			}
		}
		return ctx, status.Error(codes.Unauthenticated, "authentication required: a bearer token (--grpc-token) or a TLS client certificate")
	}
	return WithPrincipal(ctx, p), nil
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
