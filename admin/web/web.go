// Package web is the live web page of `cohort serve`: the groups
// overview, one group's members, assignment, lag, rebalance timeline and
// configs, and the topics with their configs. It serves only static files; the page reads the admin
// JSON API (/api/v1/...) from the same origin and polls it.
//
// The page is hand-written ES modules, one CSS file and one HTML file,
// embedded in the binary: no framework, no bundler, nothing to build
// before `go build` and nothing fetched at run time (no CDN; the
// Content-Security-Policy forbids other origins). At a few tens of KiB it
// is small enough to read in one sitting, and charts are inline SVG
// sparklines drawn by a few lines of code. Data reaches the DOM only as
// text (textContent, attribute values), never as markup; a test forbids
// innerHTML and its kin in the assets.
//
// It must not serve anything but these files: the API, /metrics and the
// health endpoints belong to package admin, which mounts this handler at
// "/". The page uses relative URLs, so it also works under a reverse
// proxy's path prefix.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// contentTypes maps the extensions of the embedded files to their types,
// fixed here rather than read from the host's mime tables, which differ
// between systems (a browser refuses an ES module served with a
// non-JavaScript type).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// csp lets the page load only its own files and talk only to its own
// origin. Styles set through the CSSOM (element.style) are allowed by it;
// inline style attributes in markup are not, and the page has none.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type file struct {
	body  []byte
	ctype string
	etag  string
}

// Handler serves the page: the index at "/" and the embedded files at
// /assets/<name>, GET and HEAD only, anything else 404. Every response
// carries a strong ETag (a hash of the content) and Cache-Control:
// no-cache, so a browser revalidates on each load and gets 304 until the
// binary changes: file names carry no hash, so nothing may be cached
// without asking.
func Handler() http.Handler {
	files := map[string]file{}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			// A file of an unlisted type would be served as
			// text/plain and refused; caught by the package's tests.
			panic("web: no content type for " + p)
		}
		sum := sha256.Sum256(b)
		files["/"+p] = file{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic("web: read embedded assets: " + err.Error())
	}
	files["/"] = files["/assets/index.html"]
	delete(files, "/assets/index.html")

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.ctype)
		h.Set("ETag", f.etag)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		if strings.HasPrefix(f.ctype, "text/html") {
			h.Set("Content-Security-Policy", csp)
			h.Set("Referrer-Policy", "no-referrer")
		}
		// ServeContent answers If-None-Match with 304 and handles
		// HEAD and ranges; the zero modtime leaves Last-Modified out.
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
	})
}
