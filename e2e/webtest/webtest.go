// Package webtest drives a headless Chromium for the tests of Cohort's web
// page: it starts Debian's chromium through chromedp, waits for conditions
// in the page with deadlines, records the page's uncaught exceptions and
// security (Content-Security-Policy) errors, and saves screenshots.
//
// It is for tests only and must not be imported by non-test code.
// Without chromium on PATH a test fails, never skips: ./test.sh installs
// it (Debian package chromium).
package webtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Timeout bounds each wait and each action: a page that has not shown
// what is expected by then has failed.
const Timeout = 30 * time.Second

// ScreenshotDirEnv, when set, names a directory that keeps the
// screenshots after the test (by default they go to the test's temporary
// directory, removed when it ends, and only their paths are logged).
const ScreenshotDirEnv = "COHORT_SCREENSHOT_DIR"

// Browser is one headless Chromium with one tab.
type Browser struct {
	t   testing.TB
	ctx context.Context

	mu       sync.Mutex
	problems []string // exceptions and security errors, in order
	dir      string
}

// Start starts Chromium and opens a blank tab; the test's cleanup stops
// it. It fails the test if chromium cannot be found or started.
func Start(t testing.TB) *Browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("webtest: chromium not found on PATH (%v): ./test.sh installs it (Debian package chromium)", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		// The tests run as root in containers without user
		// namespaces, where Chromium's sandbox cannot start.
		chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium leaves a directory for its singleton socket in
		// TMPDIR at every start (808 of them had piled up in /tmp on
		// this machine): the test's own directory goes with the test.
		chromedp.Env("TMPDIR="+t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &Browser{t: t, dir: t.TempDir()}
	if d := os.Getenv(ScreenshotDirEnv); d != "" {
		b.dir = d
	}
	// chromedp's own log lines go to the test's log until cleanup begins:
	// after the test returns, t.Logf would panic.
	var logMu sync.Mutex
	done := false
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		if !done {
			t.Logf("chromedp: "+format, args...)
		}
	}
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(logf))
	t.Cleanup(func() {
		logMu.Lock()
		done = true
		logMu.Unlock()
		cancel()
		cancelAlloc()
	})
	// The first Run starts the browser; it must have no deadline of its
	// own (the browser lives as long as that call's context).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("webtest: start %s: %v", path, err)
	}
	b.ctx = ctx
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.IsException() || (m.Source == "security" && m.Type == chromedp.ConsoleError) {
				b.mu.Lock()
				b.problems = append(b.problems, m.String())
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// Problems returns the page's uncaught exceptions and security errors
// (a Content-Security-Policy violation, say) seen so far.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}

// NoProblems fails the test if the page threw or broke its policy.
func (b *Browser) NoProblems() {
	b.t.Helper()
	if p := b.Problems(); len(p) > 0 {
		b.t.Errorf("the page reported problems:\n%s", strings.Join(p, "\n"))
	}
}

// Do runs actions under Timeout, failing the test (with what the page
// shows) if they fail.
func (b *Browser) Do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(what, err)
	}
}

// Open loads url and waits for the document to be ready.
func (b *Browser) Open(url string) {
	b.t.Helper()
	b.Do("open "+url, chromedp.Navigate(url))
}

// Click clicks the first element that the CSS selector matches, once it
// is visible.
func (b *Browser) Click(selector string) {
	b.t.Helper()
	b.Do("click "+selector, chromedp.Click(chromedp.CSS(selector), chromedp.NodeVisible))
}

// Wait waits until the JavaScript expression is truthy, for at most
// Timeout; what says what is awaited, for the failure message.
func (b *Browser) Wait(what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, Timeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingTimeout(Timeout), chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		b.fail("wait until "+what, err)
	}
}

// Eval evaluates a JavaScript expression and decodes its JSON value.
func Eval[T any](b *Browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fail("evaluate "+expr, err)
	}
	return v
}

// Screenshot saves the whole page as a PNG named name (without the
// extension) and logs its path.
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	p, err := b.screenshot(name)
	if err != nil {
		b.t.Fatalf("webtest: screenshot %s: %v", name, err)
	}
	b.t.Logf("screenshot: %s", p)
	return p
}

func (b *Browser) screenshot(name string) (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(b.dir, name+".png")
	return p, os.WriteFile(p, png, 0o644)
}

// fail ends the test with err, the page's address and text, and a
// screenshot of it, so that a failure says what the page showed.
func (b *Browser) fail(what string, err error) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	page, perr := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
	if perr != nil {
		page = fmt.Sprintf("(cannot read the page: %v)", perr)
	}
	shot, serr := b.screenshot("failure")
	if serr != nil {
		shot = fmt.Sprintf("(no screenshot: %v)", serr)
	}
	b.t.Fatalf("webtest: %s: %v\nscreenshot: %s\nproblems: %q\npage:\n%s", what, err, shot, b.Problems(), page)
}
