package security_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/globaltest"
	"github.com/cohort-dev/cohort/security"
)

// TestTokenHTTPBasic: the admin listener's authentication takes a SCRAM
// user's password (HTTP Basic) as well as the bearer token; a wrong
// password is refused with a Basic challenge, held for the failed
// authentication delay while other callers are answered, and never
// taken for an anonymous caller when no token is configured.
func TestTokenHTTPBasic(t *testing.T) {
	creds := security.NewCredentials(globaltest.Start(t, nil))
	c := security.NewCredential(security.ScramSHA256, "alice-pw", 4096)
	if err := creds.Apply([]security.Change{{User: "alice", Mechanism: security.ScramSHA256, Cred: &c}}); err != nil {
		t.Fatal(err)
	}
	who := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, security.PrincipalFrom(r.Context()).String()+" "+map[security.AuthMethod]string{
			security.AuthOpen: "open", security.AuthToken: "token", security.AuthBasic: "basic", security.AuthCertificate: "certificate",
		}[security.AuthMethodFrom(r.Context())])
	})
	// A delay no test waits out: a wrong password's answer must not come
	// while the others are answered.
	withToken := httptest.NewServer(security.Token{Secret: "tok", User: "admin", Passwords: creds, FailedAuthenticationDelay: time.Hour}.HTTP(who))
	defer withToken.Close()
	open := httptest.NewServer(security.Token{Passwords: creds, FailedAuthenticationDelay: -1}.HTTP(who))
	defer open.Close()

	get := func(ctx context.Context, url string, set func(*http.Request)) (int, string, http.Header, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		if set != nil {
			set(req)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b)), resp.Header, nil
	}
	basic := func(u, p string) func(*http.Request) { return func(r *http.Request) { r.SetBasicAuth(u, p) } }
	bearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok") }
	ctx := context.Background()

	wrongCtx, cancelWrong := context.WithCancel(ctx)
	wrongDone := make(chan error, 1)
	go func() {
		_, _, _, err := get(wrongCtx, withToken.URL, basic("alice", "wrong"))
		wrongDone <- err
	}()
	for _, tc := range []struct {
		url  string
		set  func(*http.Request)
		code int
		body string
	}{
		{withToken.URL, basic("alice", "alice-pw"), 200, "User:alice basic"},
		{withToken.URL, bearer, 200, "User:admin token"},
		{withToken.URL, nil, 401, ""},
		{open.URL, nil, 200, "User:ANONYMOUS open"},
		{open.URL, basic("alice", "alice-pw"), 200, "User:alice basic"},
		{open.URL, basic("alice", "wrong"), 401, ""},
		{open.URL, basic("nobody", "x"), 401, ""},
		{open.URL, func(r *http.Request) { r.Header.Set("Authorization", "Basic !!!") }, 401, ""},
	} {
		code, body, hdr, err := get(ctx, tc.url, tc.set)
		if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || (tc.body != "" && body != tc.body) {
			t.Errorf("%d %q, want %d %q", code, body, tc.code, tc.body)
		}
		if code == 401 && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Basic realm=") {
			t.Errorf("401 without a Basic challenge: %q", hdr.Values("WWW-Authenticate"))
		}
	}
	select {
	case err := <-wrongDone:
		t.Fatalf("a wrong password was answered before its delay: %v", err)
	default:
	}
	cancelWrong()
	if err := <-wrongDone; err == nil {
		t.Errorf("the held request ended without an error once its caller gave up")
	}
}
