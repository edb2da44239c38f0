package topics

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/clocktest"
)

func newFakeClock() *clocktest.FakeClock {
	return clocktest.NewFakeClock(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
}

// newRetentionEnv is an env whose log runs on a fake clock, with the
// retention check every interval of it. Tests that run passes themselves
// pass an interval they never reach, so that no pass of the loop's runs
// beside theirs.
func newRetentionEnv(t *testing.T, every time.Duration) (*env, *clocktest.FakeClock) {
	t.Helper()
	e := newEnv(t)
	clock := newFakeClock()
	e.close()
	e.clock, e.every = clock, every
	e.open()
	return e, clock
}

// never is a retention check interval the tests' clocks never reach.
const never = 1000 * time.Hour

// waitStart waits until p's log start is start and its first segment
// file starts there (the loop removes the files after it moves the
// start).
func waitStart(t *testing.T, p *Partition, start int64) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("the log start to reach %d", start), func() bool {
		ls, _ := p.Offsets()
		bases := segBases(t, p)
		return ls == start && len(bases) > 0 && bases[0] == start
	})
}

// oneAt is a batch of one record of about 150 bytes at time ts (Unix
// ms): larger than a segment.bytes of 100, so each gets a segment.
func oneAt(t testing.TB, ts int64, tag string) []byte {
	o := noProducer()
	o.records = []testRecord{{Key: []byte(tag), Value: bytes.Repeat([]byte{'v'}, 100), TS: ts}}
	return makeBatch(t, o)
}

// segBases are the base offsets of p's segment files, oldest first.
func segBases(t testing.TB, p *Partition) []int64 {
	t.Helper()
	var out []int64
	for _, f := range segFiles(t, p) {
		n, err := strconv.ParseInt(filepath.Base(f)[:20], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// checkStart asserts that p starts at start and ends at end, on disk and
// on the wire: reads below the start are out of range, a read at it
// returns its batch, and no timestamp search answers below it.
func checkStart(t *testing.T, p *Partition, start, end int64) {
	t.Helper()
	if ls, hw := p.Offsets(); ls != start || hw != end {
		t.Fatalf("offsets %d-%d, want %d-%d", ls, hw, start, end)
	}
	if bases := segBases(t, p); len(bases) == 0 || bases[0] != start {
		t.Fatalf("segment files start at %v, want %d", bases, start)
	}
	if start > 0 {
		if _, err := p.Read(start-1, 1<<20, true); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read below the start: %v, want ErrOffsetOutOfRange", err)
		}
	}
	got := readAll(t, p, start)
	if int64(len(got)) != end-start || got[0].Base != start {
		t.Fatalf("read %d batches from %d, want %d from %d", len(got), start, end-start, start)
	}
	if off, _, found, err := p.OffsetForTimestamp(0); err != nil || !found || off != start {
		t.Fatalf("first record at or after time 0: %d %v %v, want %d", off, found, err, start)
	}
	if off, _, found, err := p.MaxTimestamp(); err != nil || !found || off < start {
		t.Fatalf("max timestamp at %d %v %v, below the start %d", off, found, err, start)
	}
}

// TestRetentionMs: a segment goes once its newest record is older than
// retention.ms by the clock, the recent ones stay, and the active one
// stays even when it has expired too; -1 and a policy without delete
// keep everything.
func TestRetentionMs(t *testing.T) {
	e, clock := newRetentionEnv(t, never)
	now := clock.Now().UnixMilli()
	hour := time.Hour.Milliseconds()
	for _, name := range []string{"t", "forever", "compacted"} {
		cfg := map[string]string{"segment.bytes": "100", "retention.ms": strconv.FormatInt(hour, 10)}
		switch name {
		case "forever":
			cfg["retention.ms"] = "-1"
		case "compacted":
			cfg["cleanup.policy"] = "compact"
		}
		p := e.create(name, 1, cfg).Partitions[0]
		// 0-2 three hours old, 3 an hour and a millisecond, 4 an hour
		// exactly, 5 ten minutes; each its own segment.
		for i, age := range []int64{3 * hour, 3 * hour, 3 * hour, hour + 1, hour, 10 * 60000} {
			mustAppend(t, p, oneAt(t, now-age, fmt.Sprint(i)))
		}
		if n := len(segBases(t, p)); n != 6 {
			t.Fatalf("%s: %d segments, want 6", name, n)
		}
	}
	e.log.retain()
	checkStart(t, e.part("t", 0), 4, 6)
	checkStart(t, e.part("forever", 0), 0, 6)
	checkStart(t, e.part("compacted", 0), 0, 6)

	// An hour later the rest has expired, but the last segment is the
	// active one.
	clock.Advance(time.Hour)
	e.log.retain()
	checkStart(t, e.part("t", 0), 5, 6)
	checkStart(t, e.part("forever", 0), 0, 6)
}

// TestRetentionBytes: the oldest segments go while the partition stays
// at least retention.bytes without them, exactly at the boundary.
func TestRetentionBytes(t *testing.T) {
	size := int64(len(oneAt(t, 0, "0")))
	for _, c := range []struct {
		limit int64
		start int64 // of 6 one-batch segments
	}{
		{-1, 0},
		{6 * size, 0},
		{5*size + 1, 0},
		{5 * size, 1},
		{3*size + 1, 2},
		{3 * size, 3},
		{3*size - 1, 3},
		{0, 5}, // never the active segment
	} {
		t.Run(strconv.FormatInt(c.limit, 10), func(t *testing.T) {
			e, clock := newRetentionEnv(t, never)
			p := e.create("t", 1, map[string]string{"segment.bytes": "100", "retention.bytes": strconv.FormatInt(c.limit, 10)}).Partitions[0]
			for i := range 6 {
				// Fresh records: retention.ms (a week) lets them be.
				mustAppend(t, p, oneAt(t, clock.Now().UnixMilli(), fmt.Sprint(i)))
			}
			if got := p.Size(); got != 6*size {
				t.Fatalf("size %d, want %d", got, 6*size)
			}
			e.log.retain()
			checkStart(t, p, c.start, 6)
			if got := p.Size(); got != (6-c.start)*size {
				t.Fatalf("size %d after retention, want %d", got, (6-c.start)*size)
			}
		})
	}
}

// TestRetentionOnConfigChange: lowering retention.bytes with AlterConfigs
// deletes segments without waiting for the periodic check (the fake
// clock never moves here).
func TestRetentionOnConfigChange(t *testing.T) {
	e, clock := newRetentionEnv(t, never)
	p := e.create("t", 1, map[string]string{"segment.bytes": "100"}).Partitions[0]
	for i := range 5 {
		mustAppend(t, p, oneAt(t, clock.Now().UnixMilli(), fmt.Sprint(i)))
	}
	if err := e.log.AlterConfigs("t", map[string]string{"segment.bytes": "100", "retention.bytes": "1"}, false); err != nil {
		t.Fatal(err)
	}
	waitStart(t, p, 4)
	checkStart(t, p, 4, 5)
}

// TestRetentionLoop: the periodic check runs when the clock reaches it,
// and stops with the Log. (Nothing but the timer starts a pass here:
// creating a topic does not.)
func TestRetentionLoop(t *testing.T) {
	e, clock := newRetentionEnv(t, time.Minute)
	// A second older than the clock: the pass the timer starts may read
	// the clock at the timer's own time (a minute on), before Advance
	// reaches its end, and must find the records past a minute old then.
	now := clock.Now().UnixMilli() - 1000
	p := e.create("t", 1, map[string]string{"segment.bytes": "100", "retention.ms": "60000"}).Partitions[0]
	for i := range 4 {
		mustAppend(t, p, oneAt(t, now, fmt.Sprint(i)))
	}
	if start, _ := p.Offsets(); start != 0 {
		t.Fatalf("log start %d before any check", start)
	}
	clock.Advance(61 * time.Second) // the records are older than a minute
	waitStart(t, p, 3)
	checkStart(t, p, 3, 4)
	e.close() // returns: the loop stopped
}

// TestRetentionDeletesBelowLogStart: the segments wholly below a log
// start DeleteRecords set go at the next check, whatever cleanup.policy
// says, as Kafka's deleteLogStartOffsetBreachedSegments; the segment that
// holds the start stays.
func TestRetentionDeletesBelowLogStart(t *testing.T) {
	e, clock := newRetentionEnv(t, never)
	p := e.create("t", 1, map[string]string{"segment.bytes": "100", "cleanup.policy": "compact"}).Partitions[0]
	for i := range 5 {
		mustAppend(t, p, oneAt(t, clock.Now().UnixMilli(), fmt.Sprint(i)))
	}
	o := noProducer()
	o.records = simpleRecords(3, "multi", clock.Now().UnixMilli()) // offsets 5-7 in one segment
	mustAppend(t, p, makeBatch(t, o))
	mustAppend(t, p, oneAt(t, clock.Now().UnixMilli(), "last")) // 8
	if _, err := p.DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	e.log.retain()
	if got := segBases(t, p); len(got) != 2 || got[0] != 5 {
		t.Fatalf("segments %v, want those at 5 and 8", got)
	}
	if start, hw := p.Offsets(); start != 6 || hw != 9 {
		t.Fatalf("offsets %d-%d, want 6-9", start, hw)
	}
	e.reopen()
	p = e.part("t", 0)
	if start, hw := p.Offsets(); start != 6 || hw != 9 {
		t.Fatalf("after a reopen: offsets %d-%d, want 6-9", start, hw)
	}
}

// TestRetentionReopen: after retention the log start survives a reopen
// (and a crash: it is stored before a file goes), and appends go on at
// the end.
func TestRetentionReopen(t *testing.T) {
	e, clock := newRetentionEnv(t, never)
	p := e.create("t", 1, map[string]string{"segment.bytes": "100", "retention.bytes": "1"}).Partitions[0]
	for i := range 6 {
		mustAppend(t, p, oneAt(t, clock.Now().UnixMilli(), fmt.Sprint(i)))
	}
	e.log.retain()
	checkStart(t, p, 5, 6)
	if b, err := os.ReadFile(filepath.Join(p.dir, logStartFile)); err != nil || string(b) != "5" {
		t.Fatalf("stored log start %q %v, want 5", b, err)
	}
	e.reopen()
	p = e.part("t", 0)
	checkStart(t, p, 5, 6)
	if res := mustAppend(t, p, oneAt(t, clock.Now().UnixMilli(), "after")); res.BaseOffset != 6 || res.LogStart != 5 {
		t.Fatalf("append after the reopen at %d, log start %d", res.BaseOffset, res.LogStart)
	}
	e.reopen()
	checkStart(t, e.part("t", 0), 5, 7)
}

// TestRetentionCrashStates opens a partition in every state a crash can
// leave a retention pass in: the new log start stored, and any subset of
// the segment files below it removed (the file system may keep removals
// in any order, leaving gaps). Each opens at the new start with every
// record above it, and the leftovers are removed. Before the start is
// stored, no file has gone: that is the state before the pass.
func TestRetentionCrashStates(t *testing.T) {
	const below = 3 // segments 0-2 go; the log starts at 3
	for mask := range 1 << below {
		t.Run(fmt.Sprintf("removed=%03b", mask), func(t *testing.T) {
			e, clock := newRetentionEnv(t, never)
			p := e.create("t", 1, map[string]string{"segment.bytes": "100"}).Partitions[0]
			for i := range 6 {
				mustAppend(t, p, oneAt(t, clock.Now().UnixMilli(), fmt.Sprint(i)))
			}
			dir := p.dir
			e.close()
			if err := os.WriteFile(filepath.Join(dir, logStartFile), []byte("3"), 0o644); err != nil {
				t.Fatal(err)
			}
			for i := range below {
				if mask&(1<<i) != 0 {
					if err := os.Remove(filepath.Join(dir, fmt.Sprintf("%020d%s", i, segmentSuffix))); err != nil {
						t.Fatal(err)
					}
				}
			}
			e.open()
			checkStart(t, e.part("t", 0), 3, 6)
		})
	}
}

// TestLogStartPastCrashedEnd: a log start DeleteRecords moved to a log
// end whose tail a crash then took comes down to the new end, durably,
// so that the records appended there later are not hidden by the next
// restart.
func TestLogStartPastCrashedEnd(t *testing.T) {
	e, clock := newRetentionEnv(t, never)
	p := e.create("t", 1, nil).Partitions[0]
	for i := range 3 {
		mustAppend(t, p, oneAt(t, clock.Now().UnixMilli(), fmt.Sprint(i)))
	}
	dir := p.dir
	e.close()
	// As if DeleteRecordsBefore(-1) had run at an end of 5.
	if err := os.WriteFile(filepath.Join(dir, logStartFile), []byte("5"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.open()
	p = e.part("t", 0)
	if start, hw := p.Offsets(); start != 3 || hw != 3 {
		t.Fatalf("offsets %d-%d, want 3-3", start, hw)
	}
	for i := range 4 {
		mustAppend(t, p, oneAt(t, clock.Now().UnixMilli(), fmt.Sprint("new", i)))
	}
	e.reopen()
	p = e.part("t", 0)
	if start, hw := p.Offsets(); start != 3 || hw != 7 {
		t.Fatalf("after another reopen: offsets %d-%d, want 3-7", start, hw)
	}
	if got := readAll(t, p, 3); len(got) != 4 {
		t.Fatalf("%d batches from 3, want 4", len(got))
	}
}

// TestSegmentMs: the active segment rolls when an appended batch's
// timestamp is more than segment.ms after its first batch's (Kafka's
// record-time rule), also after a reopen, and by the clock since the
// segment was created when its first batch has no timestamp.
func TestSegmentMs(t *testing.T) {
	e, clock := newRetentionEnv(t, never)
	t0 := clock.Now().UnixMilli()
	step := func(topic string, b []byte, segs int) {
		t.Helper()
		mustAppend(t, e.part(topic, 0), b)
		if got := len(segBases(t, e.part(topic, 0))); got != segs {
			t.Fatalf("%s: %d segments, want %d", topic, got, segs)
		}
	}
	at := func(ts int64) []byte { return oneAt(t, ts, fmt.Sprint(ts)) }
	e.create("t", 1, map[string]string{"segment.ms": "1000"})
	step("t", at(t0), 1)
	step("t", at(t0+500), 1)
	step("t", at(t0+1000), 1) // exactly segment.ms: not more
	step("t", at(t0+1001), 2)
	step("t", at(t0+2001), 2)
	e.reopen() // the first batch's timestamp is read back
	step("t", at(t0+2002), 3)
	step("t", at(t0+1), 3) // an earlier timestamp never rolls

	// Without a timestamp in the first batch the segment's age decides.
	o := noProducer()
	o.records = []testRecord{{Key: []byte("k"), Value: []byte("v"), TS: -1}}
	noTS := makeBatch(t, o)
	e.create("none", 1, map[string]string{"segment.ms": "1000"})
	step("none", bytes.Clone(noTS), 1)
	clock.Advance(time.Second)
	step("none", at(t0+999999), 1) // record time does not count here
	clock.Advance(time.Millisecond)
	step("none", bytes.Clone(noTS), 2)
}

// TestRetentionHeldSegment: a read that found its batch before retention
// removed the segment still reads it (the file stays open until the read
// is done), and the file is closed once it is.
func TestRetentionHeldSegment(t *testing.T) {
	e, clock := newRetentionEnv(t, never)
	p := e.create("t", 1, map[string]string{"segment.bytes": "100", "retention.bytes": "0"}).Partitions[0]
	want := oneAt(t, clock.Now().UnixMilli(), "held")
	mustAppend(t, p, want)
	mustAppend(t, p, oneAt(t, clock.Now().UnixMilli(), "next"))
	// What OffsetForTimestamp does before it reads.
	p.mu.Lock()
	entry := p.batches[0]
	entry.seg.refs++
	p.mu.Unlock()
	if n, err := p.retain(clock.Now()); err != nil || n != 1 {
		t.Fatalf("retain: %d %v, want 1 segment deleted", n, err)
	}
	if got := segBases(t, p); len(got) != 1 || got[0] != 1 {
		t.Fatalf("segment files %v, want only 1", got)
	}
	got, err := p.readBatch(entry)
	if err != nil {
		t.Fatalf("read of the held segment: %v", err)
	}
	if !bytes.Equal(got[batchHeaderSize:], want[batchHeaderSize:]) {
		t.Fatal("read of the held segment returned other bytes")
	}
	if err := entry.seg.f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("the removed segment's file is still open after the read (close: %v)", err)
	}
}

// TestRetentionConcurrentFetch: fetches and timestamp searches from the
// log start, running while appends roll segments and retention deletes
// them, get either their batches, intact, or OFFSET_OUT_OF_RANGE when
// the start passed them; never a read error. Run it with -race.
func TestRetentionConcurrentFetch(t *testing.T) {
	e, clock := newRetentionEnv(t, never)
	p := e.create("t", 1, map[string]string{"segment.bytes": "400", "retention.bytes": "1200"}).Partitions[0]
	now := clock.Now().UnixMilli()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	var reads [4]int
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				start, hw := p.Offsets()
				if start == hw {
					continue
				}
				var err error
				switch r % 2 {
				case 0:
					var res ReadResult
					if res, err = p.Read(start, 1<<20, true); err == nil && len(res.Batches) == 0 {
						err = fmt.Errorf("empty read at %d below %d", start, hw)
					}
					if err == nil {
						// The batches must be intact: check their CRCs.
						for b := res.Batches; len(b) > 0; {
							h, herr := parseHeader(b)
							if herr != nil || int(h.size) > len(b) {
								err = fmt.Errorf("torn batch in a read at %d", start)
								break
							}
							if _, cerr := checkBatch(b[:h.size], true); cerr != nil {
								err = fmt.Errorf("read at %d: %w", start, cerr)
								break
							}
							b = b[h.size:]
						}
					}
				case 1:
					_, _, _, err = p.OffsetForTimestamp(now)
				}
				if err != nil && !errors.Is(err, ErrOffsetOutOfRange) {
					errc <- err
					return
				}
				reads[r]++
			}
		}()
	}
	deleted := 0
	for i := range 400 {
		mustAppend(t, p, oneAt(t, now, fmt.Sprint(i)))
		if i%5 == 4 {
			n, err := p.retain(clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			deleted += n
		}
	}
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("a read concurrent with retention: %v", err)
	}
	if deleted < 100 {
		t.Fatalf("only %d segments deleted", deleted)
	}
	start, _ := p.Offsets()
	checkStart(t, p, start, 400)
	t.Logf("%d segments deleted under %v reads", deleted, reads)
}

// TestRetentionAndTransactions: once retention passes an open
// transaction's first offset the last stable offset is the log start,
// not below it (Kafka's updateFirstUnstableOffset), and an aborted
// transaction wholly below the start is forgotten.
func TestRetentionAndTransactions(t *testing.T) {
	e, clock := newRetentionEnv(t, never)
	p := e.create("t", 1, map[string]string{"segment.bytes": "100", "retention.bytes": "1"}).Partitions[0]
	mustAppend(t, p, txnBatch(t, 8, 0, 0, 3, "a")) // 0-2
	if _, err := p.WriteMarker(8, 0, false, false, clock.Now().UnixMilli()); err != nil {
		t.Fatal(err) // 3
	}
	mustAppend(t, p, txnBatch(t, 7, 0, 0, 3, "b"))           // 4-6, left open
	mustAppend(t, p, oneAt(t, clock.Now().UnixMilli(), "x")) // 7
	mustAppend(t, p, oneAt(t, clock.Now().UnixMilli(), "y")) // 8
	if got := len(segBases(t, p)); got != 5 {
		t.Fatalf("%d segments, want 5", got)
	}
	if got := p.LastStable(); got != 4 {
		t.Fatalf("LSO %d, want 4", got)
	}
	e.log.retain()
	if start, _ := p.Offsets(); start != 8 {
		t.Fatalf("log start %d, want 8", start)
	}
	if got := p.LastStable(); got != 8 {
		t.Fatalf("LSO %d once the log starts at 8, want 8", got)
	}
	p.mu.Lock()
	aborted := len(p.aborted)
	p.mu.Unlock()
	if aborted != 0 {
		t.Fatalf("%d aborted transactions kept below the log start", aborted)
	}
}

// TestRetentionConfigBounds: Kafka's lower bounds, segment.ms at least 1
// and retention.ms at least -1, refused as INVALID_CONFIG.
func TestRetentionConfigBounds(t *testing.T) {
	for cfg, ok := range map[[2]string]bool{
		{"segment.ms", "1"}: true, {"segment.ms", "0"}: false,
		{"retention.ms", "-1"}: true, {"retention.ms", "0"}: true, {"retention.ms", "-2"}: false,
		{"retention.bytes", "-1"}: true, {"retention.bytes", "0"}: true,
	} {
		err := ValidateTopicConfigs(map[string]string{cfg[0]: cfg[1]})
		if ok && err != nil || !ok && !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s=%s: %v", cfg[0], cfg[1], err)
		}
	}
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for wait := time.Millisecond; !cond(); wait = min(2*wait, 100*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(wait)
	}
}
