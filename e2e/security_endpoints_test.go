package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/assigner/kafkaassignerpb"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestAdminHTTPTLSAndToken: with --http-tls and --admin-token the admin
// listener speaks TLS and answers 401 without the bearer token, except
// for the probes; a verified client certificate is let in without one.
func TestAdminHTTPTLSAndToken(t *testing.T) {
	n := testkit.StartSecureNode(t, node.Config{HTTPListen: "127.0.0.1:0", HTTPTLS: true, AdminToken: "s3cret"}, nil)
	client := n.CA.Client(t, "ops", pkix.Name{CommonName: "ops"})
	get := func(path, token string, cert bool) int {
		t.Helper()
		cfg := n.CA.ClientTLS()
		if cert {
			cfg = n.CA.ClientTLS(client)
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 30 * time.Second}
		defer hc.CloseIdleConnections()
		req, _ := http.NewRequest("GET", "https://"+n.HTTPAddr()+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		path, token string
		cert        bool
		want        int
	}{
		{"/metrics", "", false, http.StatusUnauthorized},
		{"/metrics", "wrong", false, http.StatusUnauthorized},
		{"/metrics", "s3cret", false, http.StatusOK},
		{"/api/v1/groups", "s3cret", false, http.StatusOK},
		{"/metrics", "", true, http.StatusOK},
		{"/healthz", "", false, http.StatusOK},
	} {
		if got := get(tc.path, tc.token, tc.cert); got != tc.want {
			t.Errorf("GET %s token %q cert %v: %d, want %d", tc.path, tc.token, tc.cert, got, tc.want)
		}
	}
	// Plain HTTP on a TLS listener gets nothing useful.
	if resp, err := http.Get("http://" + n.HTTPAddr() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP served on the TLS admin listener")
		}
	}
}

// TestGRPCTLSAndToken: with --grpc-tls and --grpc-token every
// assignment-service call needs the token or a verified client
// certificate (UNAUTHENTICATED otherwise); health checks stay open.
func TestGRPCTLSAndToken(t *testing.T) {
	n := testkit.StartSecureNode(t, node.Config{GRPCTLS: true, GRPCToken: "g-token"}, nil)
	client := n.CA.Client(t, "consumer", pkix.Name{CommonName: "consumer-1"})
	dial := func(cfg *tls.Config) *grpc.ClientConn {
		t.Helper()
		cc, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	noCert := dial(n.CA.ClientTLS())
	if _, err := healthpb.NewHealthClient(noCert).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("health check without credentials: %v", err)
	}
	call := func(cc *grpc.ClientConn, ctx context.Context) codes.Code {
		_, err := kafkaassignerpb.NewKafkaAssignerClient(cc).PartitionReady(ctx, &kafkaassignerpb.PartitionReadyRequest{})
		return status.Code(err)
	}
	if got := call(noCert, ctx); got != codes.Unauthenticated {
		t.Errorf("call without token: %v, want Unauthenticated", got)
	}
	if got := call(noCert, metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer nope")); got != codes.Unauthenticated {
		t.Errorf("call with a wrong token: %v, want Unauthenticated", got)
	}
	if got := call(noCert, metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer g-token")); got == codes.Unauthenticated || got == codes.Unavailable {
		t.Errorf("call with the token: %v", got)
	}
	if got := call(dial(n.CA.ClientTLS(client)), ctx); got == codes.Unauthenticated || got == codes.Unavailable {
		t.Errorf("call with a client certificate: %v", got)
	}
}

// TestTLSCertificateReload: a new certificate written over the files is
// served to new connections, on SIGHUP (Node.ReloadTLS) and by the file
// watch, while a connection opened before keeps working.
func TestTLSCertificateReload(t *testing.T) {
	n := testkit.StartSecureNode(t, node.Config{TLSReloadInterval: 20 * time.Millisecond}, nil)
	serverCert := func() []byte {
		t.Helper()
		c, err := tls.Dial("tcp", n.Addr("SSL"), n.CA.ClientTLS())
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Raw
	}
	old, err := tls.Dial("tcp", n.Addr("SSL"), n.CA.ClientTLS())
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	first := serverCert()

	replace := func(name string) []byte {
		p := n.CA.Server(t, name)
		for _, f := range [][2]string{{p.CertFile, n.Server.CertFile}, {p.KeyFile, n.Server.KeyFile}} {
			b, err := os.ReadFile(f[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f[1], b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return p.TLS.Certificate[0]
	}
	second := replace("second")
	if err := n.ReloadTLS(); err != nil {
		t.Fatal(err)
	}
	if got := serverCert(); !bytes.Equal(got, second) || bytes.Equal(got, first) {
		t.Fatal("a new connection after ReloadTLS did not get the new certificate")
	}
	third := replace("third")
	testkit.Eventually(t, 30*time.Second, "the watch serves the third certificate", func() bool {
		return bytes.Equal(serverCert(), third)
	})
	// The connection from before the reloads still talks: an ApiVersions
	// v0 request and its answer.
	req := []byte{0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 7, 0, 0}
	old.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := old.Write(req[:]); err != nil {
		t.Fatalf("old connection: %v", err)
	}
	var hdr [8]byte
	if _, err := old.Read(hdr[:]); err != nil || hdr[7] != 7 {
		t.Fatalf("old connection's answer: %v %v", hdr, err)
	}
}
