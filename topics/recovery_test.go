package topics

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// appended is a batch a test appended: where it went and what it held.
type appended struct {
	base    int64
	size    int
	records []testRecord
}

func appendN(t *testing.T, p *Partition, n int, tag string) []appended {
	t.Helper()
	var out []appended
	for i := range n {
		o := noProducer()
		o.records = simpleRecords(1+i%4, fmt.Sprintf("%s%d", tag, i), int64(100*i))
		if i%3 == 1 {
			o.codec, o.compressed = kgo.GzipCompression(), true
		}
		b := makeBatch(t, o)
		res := mustAppend(t, p, b)
		out = append(out, appended{base: res.BaseOffset, size: len(b), records: o.records})
	}
	return out
}

// checkLog asserts that p holds exactly want, from offset 0.
func checkLog(t *testing.T, p *Partition, want []appended) {
	t.Helper()
	var end int64
	if len(want) > 0 {
		l := want[len(want)-1]
		end = l.base + int64(len(l.records))
	}
	if ls, hw := p.Offsets(); ls != 0 || hw != end {
		t.Fatalf("Offsets = %d %d, want 0 %d", ls, hw, end)
	}
	got := readAll(t, p, 0)
	if len(got) != len(want) {
		t.Fatalf("log has %d batches, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Base != want[i].base || !sameRecords(got[i].Records, want[i].records) {
			t.Fatalf("batch %d: base %d records %d, want base %d records %d", i, got[i].Base, len(got[i].Records), want[i].base, len(want[i].records))
		}
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	e := newEnv(t)
	e.create("a", 2, nil)
	e.create("b", 1, map[string]string{"segment.bytes": "1024"})
	wa0 := appendN(t, e.part("a", 0), 10, "a0")
	wa1 := appendN(t, e.part("a", 1), 3, "a1")
	wb := appendN(t, e.part("b", 0), 40, "b")
	for range 2 {
		e.reopen()
		checkLog(t, e.part("a", 0), wa0)
		checkLog(t, e.part("a", 1), wa1)
		checkLog(t, e.part("b", 0), wb)
	}
	if len(segFiles(t, e.part("b", 0))) < 3 {
		t.Fatalf("topic b did not roll segments")
	}
	// Appends continue where the log left off.
	more := appendN(t, e.part("a", 1), 2, "more")
	if more[0].base != 6 {
		t.Fatalf("append after reopen at %d, want 6", more[0].base)
	}
	e.reopen()
	checkLog(t, e.part("a", 1), append(wa1, more...))
}

func TestRecoveryTruncatesDamagedTail(t *testing.T) {
	tails := []struct {
		name string
		tail func(t *testing.T) []byte
	}{
		{"garbage", func(*testing.T) []byte {
			return []byte("this is not a record batch at all, but it is long enough to be a header......")
		}},
		{"few bytes", func(*testing.T) []byte { return []byte{0, 0, 0} }},
		{"zeros", func(*testing.T) []byte { return make([]byte, 4096) }},
		{"half a batch", func(t *testing.T) []byte {
			b := plainBatch(t, 5, "torn")
			return b[:len(b)/2]
		}},
		{"header only", func(t *testing.T) []byte { return plainBatch(t, 5, "torn")[:batchHeaderSize] }},
		{"batch missing its last byte", func(t *testing.T) []byte {
			b := plainBatch(t, 5, "torn")
			return b[:len(b)-1]
		}},
		{"valid batch at the wrong offset", func(t *testing.T) []byte {
			return plainBatch(t, 2, "dup") // base offset 0, but the log is further on
		}},
		{"valid batch with a bad CRC", func(t *testing.T) []byte {
			b := plainBatch(t, 2, "bad")
			b[len(b)-3] ^= 0x40
			return b
		}},
	}
	for _, tc := range tails {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.create("t", 1, nil)
			p := e.part("t", 0)
			want := appendN(t, p, 5, "x")
			segs := segFiles(t, p)
			seg := segs[len(segs)-1]
			e.close()
			clean := fileSize(t, seg) // a clean close trims the zeros written ahead

			f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			tail := tc.tail(t)
			if _, err := f.Write(tail); err != nil {
				t.Fatal(err)
			}
			f.Close()

			e.open()
			p = e.part("t", 0)
			size := clean
			if !slices.ContainsFunc(tail, func(c byte) bool { return c != 0 }) {
				// Zeros are what a crash leaves of the room written
				// ahead of the batches: kept, the next batch goes there.
				size += int64(len(tail))
			}
			if got := fileSize(t, seg); got != size {
				t.Fatalf("segment is %d bytes after recovery, want %d", got, size)
			}
			checkLog(t, p, want)
			more := appendN(t, p, 2, "y")
			_, end := p.Offsets()
			if more[0].base != want[len(want)-1].base+int64(len(want[len(want)-1].records)) {
				t.Fatalf("append after recovery at %d", more[0].base)
			}
			e.reopen()
			p = e.part("t", 0)
			checkLog(t, p, append(want, more...))
			if _, hw := p.Offsets(); hw != end {
				t.Fatalf("end %d after second reopen, want %d", hw, end)
			}
		})
	}
}

func TestRecoveryTruncatesAtCorruptBatch(t *testing.T) {
	for _, which := range []int{4, 2, 0} { // last, middle, first
		t.Run(strconv.Itoa(which), func(t *testing.T) {
			e := newEnv(t)
			e.create("t", 1, nil)
			p := e.part("t", 0)
			want := appendN(t, p, 5, "x")
			seg := segFiles(t, p)[0]
			e.close()

			pos := 0
			for _, a := range want[:which] {
				pos += a.size
			}
			data, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			data[pos+want[which].size-2] ^= 0x01 // inside the records
			if err := os.WriteFile(seg, data, 0o644); err != nil {
				t.Fatal(err)
			}

			e.open()
			p = e.part("t", 0)
			if got := fileSize(t, seg); got != int64(pos) {
				t.Fatalf("segment is %d bytes, want %d", got, pos)
			}
			checkLog(t, p, want[:which])
			res := mustAppend(t, p, plainBatch(t, 1, "after"))
			if res.BaseOffset != want[which].base {
				t.Fatalf("append after truncation at %d, want %d", res.BaseOffset, want[which].base)
			}
		})
	}
}

func TestRecoveryForgetsTruncatedProducerState(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, nil)
	p := e.part("t", 0)
	const pid = 5
	mustAppend(t, p, idemBatch(t, pid, 0, 0, 2, "a"))
	lost := idemBatch(t, pid, 0, 2, 2, "b")
	mustAppend(t, p, bytes.Clone(lost))
	seg := segFiles(t, p)[0]
	e.close()
	data, _ := os.ReadFile(seg)
	data[len(data)-1] ^= 0xff
	os.WriteFile(seg, data, 0o644)
	e.open()
	p = e.part("t", 0)
	// The torn batch is gone, so its resend is new, not a duplicate.
	res, err := p.Append(lost, 0)
	if err != nil || res.Duplicate || res.BaseOffset != 2 {
		t.Fatalf("resend of the lost batch = %+v %v", res, err)
	}
}

func TestSegmentRoll(t *testing.T) {
	e := newEnv(t)
	tp := e.create("t", 1, map[string]string{"segment.bytes": "1024"})
	p := tp.Partitions[0]
	want := appendN(t, p, 30, "r")
	// One oversized batch gets a segment of its own.
	o := noProducer()
	o.records = simpleRecords(60, "big", 5)
	big := makeBatch(t, o)
	if len(big) <= 1024 {
		t.Fatalf("big batch is only %d bytes", len(big))
	}
	res := mustAppend(t, p, big)
	want = append(want, appended{base: res.BaseOffset, size: len(big), records: o.records})
	want = append(want, appendN(t, p, 3, "s")...)

	segs := segFiles(t, p)
	if len(segs) < 4 {
		t.Fatalf("%d segments", len(segs))
	}
	// Segment names are the base offsets of their first batches, and no
	// segment holding more than one batch exceeds segment.bytes.
	starts := map[int64]bool{}
	for _, a := range want {
		starts[a.base] = true
	}
	for _, s := range segs {
		base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(s), segmentSuffix), 10, 64)
		if err != nil || !starts[base] {
			t.Fatalf("segment %s does not start at a batch", s)
		}
		if n := fileSize(t, s); n > 1024 && n != int64(len(big)) {
			t.Fatalf("segment %s is %d bytes", s, n)
		}
	}
	if !strings.HasSuffix(segs[0], "00000000000000000000.log") {
		t.Fatalf("first segment %s", segs[0])
	}

	// A read stops at the end of a segment.
	r, err := p.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(r.Batches)) != fileSize(t, segs[0]) {
		t.Fatalf("read of %d bytes from a %d-byte first segment", len(r.Batches), fileSize(t, segs[0]))
	}
	checkLog(t, p, want)
	// Every offset reads from its own batch, whatever segment it is in.
	for _, a := range want {
		for off := a.base; off < a.base+int64(len(a.records)); off++ {
			r, err := p.Read(off, 1, true)
			if err != nil {
				t.Fatal(err)
			}
			bs := splitBatches(t, r.Batches)
			if len(bs) != 1 || bs[0].Base != a.base {
				t.Fatalf("Read(%d) returned %d batches at %v, want one at %d", off, len(bs), bs, a.base)
			}
		}
	}
	e.reopen()
	p = e.part("t", 0)
	checkLog(t, p, want)
	if got := segFiles(t, p); len(got) != len(segs) {
		t.Fatalf("%d segments after reopen, had %d", len(got), len(segs))
	}
	more := appendN(t, p, 10, "m")
	e.reopen()
	checkLog(t, e.part("t", 0), append(want, more...))
}

func TestRecoveryAcrossSegments(t *testing.T) {
	setup := func(t *testing.T) (*env, []appended, []string) {
		e := newEnv(t)
		e.create("t", 1, map[string]string{"segment.bytes": "1024"})
		p := e.part("t", 0)
		want := appendN(t, p, 40, "z")
		segs := segFiles(t, p)
		if len(segs) < 4 {
			t.Fatalf("only %d segments", len(segs))
		}
		e.close()
		return e, want, segs
	}
	segBase := func(s string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(s), segmentSuffix), 10, 64)
		return n
	}
	batchesBelow := func(want []appended, off int64) []appended {
		var out []appended
		for _, a := range want {
			if a.base < off {
				out = append(out, a)
			}
		}
		return out
	}

	t.Run("corrupt batch in a middle segment", func(t *testing.T) {
		e, want, segs := setup(t)
		mid := segs[1]
		data, _ := os.ReadFile(mid)
		// Corrupt the second batch of the segment.
		var first appended
		for _, a := range want {
			if a.base == segBase(mid) {
				first = a
			}
		}
		if len(data) < first.size+batchHeaderSize+2 {
			t.Fatalf("segment %s holds one batch", mid)
		}
		data[first.size+batchHeaderSize+1] ^= 0x10
		os.WriteFile(mid, data, 0o644)

		e.open()
		p := e.part("t", 0)
		var keep []appended
		for i, a := range want {
			if a.base == segBase(mid) {
				keep = want[:i+1]
			}
		}
		checkLog(t, p, keep)
		got := segFiles(t, p)
		if len(got) != 2 || got[1] != mid || fileSize(t, mid) != int64(first.size) {
			t.Fatalf("segments after recovery: %v", got)
		}
		more := appendN(t, p, 20, "after")
		e.reopen()
		checkLog(t, e.part("t", 0), append(keep, more...))
	})

	t.Run("torn tail of the last segment", func(t *testing.T) {
		e, want, segs := setup(t)
		last := segs[len(segs)-1]
		size := fileSize(t, last)
		f, _ := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
		f.Write(plainBatch(t, 3, "torn")[:70])
		f.Close()
		e.open()
		checkLog(t, e.part("t", 0), want)
		if fileSize(t, last) != size {
			t.Fatal("tail not truncated")
		}
	})

	t.Run("missing middle segment", func(t *testing.T) {
		e, want, segs := setup(t)
		os.Remove(segs[2])
		e.open()
		p := e.part("t", 0)
		checkLog(t, p, batchesBelow(want, segBase(segs[2])))
		if got := segFiles(t, p); len(got) != 2 {
			t.Fatalf("segments after a gap: %v", got)
		}
	})

	t.Run("byte flipped in the last segment", func(t *testing.T) {
		e, want, segs := setup(t)
		last := segs[len(segs)-1]
		data, _ := os.ReadFile(last)
		data[len(data)/2] ^= 0xff
		os.WriteFile(last, data, 0o644)
		e.open()
		p := e.part("t", 0)
		// Whatever survives is a prefix of the log, ending in the segment.
		_, hw := p.Offsets()
		if hw < segBase(last) {
			t.Fatalf("end %d before the last segment %d", hw, segBase(last))
		}
		checkLog(t, p, batchesBelow(want, hw))
		res := mustAppend(t, p, plainBatch(t, 1, "n"))
		if res.BaseOffset != hw {
			t.Fatalf("append at %d, want %d", res.BaseOffset, hw)
		}
	})

	t.Run("empty last segment", func(t *testing.T) {
		e, want, _ := setup(t)
		last := want[len(want)-1]
		end := last.base + int64(len(last.records))
		dir := filepath.Dir(setupSeg(t, e))
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.log", end)), nil, 0o644)
		e.open()
		p := e.part("t", 0)
		checkLog(t, p, want)
		res := mustAppend(t, p, plainBatch(t, 1, "n"))
		if res.BaseOffset != end {
			t.Fatalf("append at %d, want %d", res.BaseOffset, end)
		}
		e.reopen()
		checkLog(t, e.part("t", 0), append(want, appended{base: end, records: simpleRecords(1, "n", 1000)}))
	})

	t.Run("stray segment beyond the end", func(t *testing.T) {
		e, want, _ := setup(t)
		dir := filepath.Dir(setupSeg(t, e))
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.log", 99999)), plainBatch(t, 1, "stray"), 0o644)
		e.open()
		p := e.part("t", 0)
		checkLog(t, p, want)
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%020d.log", 99999))); !os.IsNotExist(err) {
			t.Fatalf("stray segment kept: %v", err)
		}
	})

	t.Run("unexpected file", func(t *testing.T) {
		e, _, _ := setup(t)
		dir := filepath.Dir(setupSeg(t, e))
		os.WriteFile(filepath.Join(dir, "junk.log"), nil, 0o644)
		if l, err := Open(Config{Dir: e.dataDir(), Store: e.st}); err == nil {
			l.Close()
			t.Fatal("Open accepted junk.log in a partition dir")
		}
		os.Remove(filepath.Join(dir, "junk.log"))
		// Other names are ignored.
		os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644)
		e.open()
	})
}

// setupSeg returns the path of some segment of topic t partition 0 while the
// log is closed.
func setupSeg(t *testing.T, e *env) string {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(e.dataDir(), "*", "0", "*.log"))
	if err != nil || len(ms) == 0 {
		t.Fatalf("no segments: %v", err)
	}
	return ms[0]
}

func TestSync(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, map[string]string{"segment.bytes": "4096"})
	p := e.part("t", 0)
	if err := p.Sync(0); err != nil {
		t.Fatal(err)
	}
	res := mustAppend(t, p, plainBatch(t, 3, "a"))
	if p.synced.Load() >= res.End {
		t.Fatalf("synced %d before Sync", p.synced.Load())
	}
	if err := p.Sync(res.End); err != nil {
		t.Fatal(err)
	}
	if p.synced.Load() < res.End {
		t.Fatalf("synced %d after Sync(%d)", p.synced.Load(), res.End)
	}
	if err := p.Sync(res.End); err != nil {
		t.Fatal(err)
	}

	const writers = 50
	var wg sync.WaitGroup
	ends := make([]int64, writers)
	errs := make([]error, writers)
	batches := make([][][]byte, writers)
	for i := range writers {
		for j := range 4 {
			o := noProducer()
			o.records = simpleRecords(1+j, fmt.Sprintf("w%d-%d", i, j), 1)
			batches[i] = append(batches[i], makeBatch(t, o))
		}
	}
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, b := range batches[i] {
				r, err := p.Append(b, 0)
				if err != nil {
					errs[i] = err
					return
				}
				if err := p.Sync(r.End); err != nil {
					errs[i] = err
					return
				}
				if s := p.synced.Load(); s < r.End {
					errs[i] = fmt.Errorf("synced %d after Sync(%d)", s, r.End)
					return
				}
				ends[i] = r.End
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	_, hw := p.Offsets()
	if want := res.End + writers*(1+2+3+4); hw != want {
		t.Fatalf("end %d, want %d", hw, want)
	}
	for _, end := range ends {
		if end > hw {
			t.Fatalf("writer end %d beyond log end %d", end, hw)
		}
	}
	if err := p.Sync(hw); err != nil || p.synced.Load() != hw {
		t.Fatalf("final Sync: %v, synced %d of %d", err, p.synced.Load(), hw)
	}
	if len(segFiles(t, p)) < 2 {
		t.Fatal("no roll happened during the concurrent appends")
	}
	e.reopen()
	if _, hw2 := e.part("t", 0).Offsets(); hw2 != hw {
		t.Fatalf("end %d after reopen, want %d", hw2, hw)
	}
	if got := len(readAll(t, e.part("t", 0), 0)); got != 1+writers*4 {
		t.Fatalf("%d batches after reopen", got)
	}
	// Recovery counts everything on disk as synced.
	if s := e.part("t", 0).synced.Load(); s != hw {
		t.Fatalf("synced %d after reopen, want %d", s, hw)
	}
}

// After recovery truncates inside a middle segment, the later segments'
// files must go: if one stayed, a log that grew back to its base offset
// would take the stale file as its continuation on the next start.
func TestRecoveryDoesNotResurrectDroppedSegments(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, map[string]string{"segment.bytes": "1024"})
	p := e.part("t", 0)
	var want []appended
	for i := range 40 {
		o := noProducer()
		o.records = simpleRecords(2, fmt.Sprintf("s%d", i), int64(i))
		b := makeBatch(t, o)
		res := mustAppend(t, p, b)
		want = append(want, appended{base: res.BaseOffset, size: len(b), records: o.records})
	}
	segs := segFiles(t, p)
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	e.close()
	// Corrupt the last batch of the first segment.
	data, _ := os.ReadFile(segs[0])
	data[len(data)-1] ^= 0xff
	os.WriteFile(segs[0], data, 0o644)

	e.open()
	p = e.part("t", 0)
	_, hw := p.Offsets()
	keep := want[:hw/2]
	checkLog(t, p, keep)
	if got := segFiles(t, p); len(got) != 1 {
		t.Fatalf("segments after truncation: %v", got)
	}
	// Grow the log back to the next segment's old base (the batch fits
	// where the torn one was) and restart.
	o := noProducer()
	o.records = simpleRecords(2, "new", 7)
	res := mustAppend(t, p, makeBatch(t, o))
	keep = append(keep, appended{base: res.BaseOffset, records: o.records})
	e.reopen()
	checkLog(t, e.part("t", 0), keep)
}

// TestZerosAhead: the active segment's file is filled with zeros ahead of
// its batches (zeroAheadMin at first), so that the fsync an acknowledged produce waits
// for does not also commit a new file length; a clean close trims them,
// and a load after a crash takes them for room, not damage: the log is
// intact, and the next batch goes where the zeros were.
func TestZerosAhead(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, nil)
	p := e.part("t", 0)
	want := appendN(t, p, 3, "x")
	seg := segFiles(t, p)[0]
	if got := fileSize(t, seg); got != zeroAheadMin {
		t.Fatalf("active segment is %d bytes, want %d written ahead", got, zeroAheadMin)
	}
	// A crash: the files stay as they are (the harness's close would
	// trim them), copied before the close and put back after it.
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	e.close()
	used := 0
	for _, a := range want {
		used += a.size
	}
	if got := fileSize(t, seg); got != int64(used) {
		t.Fatalf("segment is %d bytes after a clean close, want its batches' %d", got, used)
	}
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e.open()
	p = e.part("t", 0)
	checkLog(t, p, want)
	if got := fileSize(t, seg); got != zeroAheadMin {
		t.Fatalf("segment is %d bytes after recovery, want the zeros kept (%d)", got, zeroAheadMin)
	}
	more := appendN(t, p, 2, "y")
	e.reopen()
	checkLog(t, e.part("t", 0), append(want, more...))
}
