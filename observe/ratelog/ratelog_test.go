package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimRight(l.b.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func count(lines []string, sub string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// A flood of one warning logs the burst, then one line counting the
// rest; each kind has its own burst.
func TestWarnLimiterBurstThenCount(t *testing.T) {
	var buf lockedBuffer
	w := New(slog.New(slog.NewTextHandler(&buf, nil)), 3, time.Hour)
	for i := range 10000 {
		w.Warn("bad frame", "i", i)
	}
	w.Warn("refused")
	lines := buf.lines()
	if got := count(lines, `msg="bad frame"`); got != 3 {
		t.Errorf("%d bad-frame lines, want the burst of 3", got)
	}
	if got := count(lines, `msg=refused`); got != 1 {
		t.Errorf("%d lines of another kind, want 1", got)
	}
	w.Close()
	lines = buf.lines()
	if len(lines) != 5 || !strings.Contains(lines[4], `msg="repeated warning suppressed" warning="bad frame" suppressed=9997 interval=1h0m0s`) {
		t.Errorf("want the burst, the other kind and one count of 9997 after Close; got:\n%s", strings.Join(lines, "\n"))
	}
}

// The count is logged when the interval ends, without waiting for the
// next warning, and the next interval has a fresh burst.
func TestWarnLimiterCountsAtIntervalEnd(t *testing.T) {
	var buf lockedBuffer
	w := New(slog.New(slog.NewTextHandler(&buf, nil)), 2, 20*time.Millisecond)
	defer w.Close()
	for range 50 {
		w.Warn("bad frame")
	}
	// (testkit.Eventually, which this internal test cannot import.)
	for deadline := time.Now().Add(10 * time.Second); count(buf.lines(), "repeated warning suppressed") == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the suppressed count was not logged at the end of the interval")
		}
	}
	before := count(buf.lines(), `msg="bad frame"`)
	w.Warn("bad frame")
	if got := count(buf.lines(), `msg="bad frame"`); got != before+1 {
		t.Errorf("a warning in a new interval was not logged (%d lines, was %d)", got, before)
	}
}
