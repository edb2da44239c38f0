package web

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// assetNames lists the embedded files, relative to assets/.
func assetNames(t *testing.T) []string {
	t.Helper()
	var names []string
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, strings.TrimPrefix(p, "assets/"))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func asset(t *testing.T, name string) string {
	t.Helper()
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestIndex(t *testing.T) {
	h := Handler()
	rec := get(t, h, "GET", "/")
	if rec.Code != 200 {
		t.Fatalf("GET /: %d", rec.Code)
	}
	hd := rec.Header()
	for k, want := range map[string]string{
		"Content-Type":           "text/html; charset=utf-8",
		"Cache-Control":          "no-cache",
		"X-Content-Type-Options": "nosniff",
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
			"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	} {
		if got := hd.Get(k); got != want {
			t.Errorf("GET / %s = %q, want %q", k, got, want)
		}
	}
	if rec.Body.String() != asset(t, "index.html") {
		t.Errorf("GET / is not assets/index.html")
	}
	if !strings.Contains(rec.Body.String(), `<script type="module" src="assets/app.js">`) {
		t.Errorf("index does not load assets/app.js as a module")
	}
}

func TestAssets(t *testing.T) {
	h := Handler()
	types := map[string]string{
		".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
		".svg": "image/svg+xml", ".html": "text/html; charset=utf-8",
	}
	etags := map[string]string{}
	for _, name := range assetNames(t) {
		if name == "index.html" {
			continue // served at / only
		}
		rec := get(t, h, "GET", "/assets/"+name)
		if rec.Code != 200 {
			t.Errorf("GET /assets/%s: %d", name, rec.Code)
			continue
		}
		if got, want := rec.Header().Get("Content-Type"), types[path.Ext(name)]; got != want {
			t.Errorf("/assets/%s Content-Type = %q, want %q", name, got, want)
		}
		if rec.Body.String() != asset(t, name) {
			t.Errorf("/assets/%s: body differs from the embedded file", name)
		}
		etag := rec.Header().Get("ETag")
		if !regexp.MustCompile(`^"[0-9a-f]{16}"$`).MatchString(etag) {
			t.Errorf("/assets/%s ETag = %q, want a quoted hash", name, etag)
		}
		if other, dup := etags[etag]; dup {
			t.Errorf("/assets/%s and /assets/%s share ETag %s", name, other, etag)
		}
		etags[etag] = name
		if got := rec.Header().Get("Cache-Control"); got != "no-cache" {
			t.Errorf("/assets/%s Cache-Control = %q", name, got)
		}
		// A revalidation with the current ETag costs no body.
		if rec := get(t, h, "GET", "/assets/"+name, "If-None-Match", etag); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
			t.Errorf("/assets/%s If-None-Match %s: %d with %d bytes, want 304 and none", name, etag, rec.Code, rec.Body.Len())
		}
		if rec := get(t, h, "GET", "/assets/"+name, "If-None-Match", `"0000000000000000"`); rec.Code != 200 {
			t.Errorf("/assets/%s If-None-Match of another version: %d, want 200", name, rec.Code)
		}
		if rec := get(t, h, "HEAD", "/assets/"+name); rec.Code != 200 || rec.Body.Len() != 0 {
			t.Errorf("HEAD /assets/%s: %d with %d bytes", name, rec.Code, rec.Body.Len())
		}
	}
}

func TestNotFound(t *testing.T) {
	h := Handler()
	for _, p := range []string{"/assets/nope.js", "/assets/", "/assets", "/assets/index.html", "/index.html", "/nope", "/api/v1/groups", "/assets/app.js/x"} {
		if rec := get(t, h, "GET", p); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, rec.Code)
		}
	}
	if rec := get(t, h, "POST", "/"); rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: %d Allow %q, want 405 with Allow: GET, HEAD", rec.Code, rec.Header().Get("Allow"))
	}
}

// TestModuleGraph checks without a browser that every file the page asks
// for is embedded and every embedded file is asked for.
func TestModuleGraph(t *testing.T) {
	used := map[string]bool{"index.html": true}
	for _, m := range regexp.MustCompile(`(?:src|href)="assets/([^"]+)"`).FindAllStringSubmatch(asset(t, "index.html"), -1) {
		used[m[1]] = true
	}
	imp := regexp.MustCompile(`(?m)^import [^;]* from '\./([^']+)';`)
	for _, name := range assetNames(t) {
		if path.Ext(name) != ".js" {
			continue
		}
		for _, m := range imp.FindAllStringSubmatch(asset(t, name), -1) {
			used[m[1]] = true
		}
	}
	have := map[string]bool{}
	for _, name := range assetNames(t) {
		have[name] = true
		if !used[name] {
			t.Errorf("assets/%s is embedded but nothing loads it", name)
		}
	}
	for name := range used {
		if !have[name] {
			t.Errorf("assets/%s is loaded but not embedded", name)
		}
	}
}

// TestNoMarkupFromData guards the page's escaping rule: data reaches the
// DOM as text only, so no asset may parse strings as markup or code.
func TestNoMarkupFromData(t *testing.T) {
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\(\s*['"]style|createContextualFragment|DOMParser`)
	for _, name := range assetNames(t) {
		if path.Ext(name) != ".js" {
			continue
		}
		for i, line := range strings.Split(asset(t, name), "\n") {
			if sinks.MatchString(line) {
				t.Errorf("assets/%s:%d: %s", name, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestNothingRemote: no asset loads anything from another origin (the
// page must work with no network but the node's).
func TestNothingRemote(t *testing.T) {
	url := regexp.MustCompile(`(?i)(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for _, name := range assetNames(t) {
		// The SVG namespace is a name, not an address.
		s := strings.ReplaceAll(asset(t, name), "http://www.w3.org/2000/svg", "")
		if m := url.FindString(s); m != "" {
			t.Errorf("assets/%s names %s", name, m)
		}
	}
}

// maxAssetBytes caps the page's size: it is read by people as well as
// browsers, and served on every load.
const maxAssetBytes = 64 << 10

func TestAssetSize(t *testing.T) {
	total := 0
	for _, name := range assetNames(t) {
		total += len(asset(t, name))
	}
	t.Logf("assets: %d bytes in %d files", total, len(assetNames(t)))
	if total > maxAssetBytes {
		t.Errorf("assets total %d bytes, over the budget of %d", total, maxAssetBytes)
	}
}
