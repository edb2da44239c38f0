package main

// A client of a Cohort node's admin JSON API (/api/v1/...), for what
// only Cohort knows or does: `cohort orgs`, and the cgp_ ids, RRLs and lag
// statuses `cohort groups` adds with --admin-url. It authenticates as
// the node's admin listener asks: a bearer token (--admin-token), or a
// SCRAM user's name and password (HTTP Basic), whose organisation then
// scopes every answer.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// adminHTTP is a node's admin listener and the credentials to use.
type adminHTTP struct {
	base       string // "http://127.0.0.1:9644", no trailing slash
	token      string
	user, pass string
}

func newAdminHTTP(rawURL, token, user, pass string) adminHTTP {
	base := strings.TrimSuffix(rawURL, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return adminHTTP{base: base, token: token, user: user, pass: pass}
}

// adminError is a non-2xx answer: its status and the API's message.
type adminError struct {
	method, url string
	status      int
	msg         string
}

func (e *adminError) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("%s %s: HTTP %d", e.method, e.url, e.status)
	}
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.method, e.url, e.status, e.msg)
}

// do sends body (JSON-encoded, if not nil) and decodes a 2xx answer into
// out (if not nil); any other answer is an *adminError.
func (a adminHTTP) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case a.token != "":
		req.Header.Set("Authorization", "Bearer "+a.token)
	case a.user != "":
		req.SetBasicAuth(a.user, a.pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, req.URL, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Error string }
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return &adminError{method: method, url: req.URL.String(), status: resp.StatusCode, msg: msg}
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, req.URL, err)
		}
	}
	return nil
}
