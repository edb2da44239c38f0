package topics

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// modelBatch is what the model expects at one batch of the log.
type modelBatch struct {
	base    int64
	records []testRecord
	sent    []byte // as produced, for resends
	pid     int64
}

// TestPropertyRandomAppendsAndReopens appends random batches (sizes,
// codecs, idempotent or not, with resends) with random reopens and
// occasional torn tails, and checks the log against a simple model after
// every step.
func TestPropertyRandomAppendsAndReopens(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	if testing.Short() {
		seeds = seeds[:2]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runProperty(t, seed) })
	}
}

func runProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	e := newEnv(t)
	segBytes := []string{"1024", "4096", "65536"}[rng.IntN(3)]
	e.create("t", 1, map[string]string{"segment.bytes": segBytes})
	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.ZstdCompression()}

	var model []modelBatch
	var end int64
	type producer struct {
		id    int64
		epoch int16
		seq   int32
	}
	producers := []*producer{{id: 1}, {id: 2, epoch: 3, seq: 1 << 30}, {id: 3, seq: 1<<31 - 40}}

	// verified is how many batches of the model the log was last checked
	// against; a reopen or a torn tail resets it, so that the whole log is
	// read back after every recovery (decompressing is slow under -race).
	verified := 0
	verify := func(step int, what string) {
		t.Helper()
		p := e.part("t", 0)
		if ls, hw := p.Offsets(); ls != 0 || hw != end {
			t.Fatalf("step %d (%s): Offsets %d %d, want 0 %d", step, what, ls, hw, end)
		}
		from := int64(0)
		if verified > 0 {
			from = model[verified-1].base + int64(len(model[verified-1].records))
		}
		got := readAll(t, p, from)
		if len(got) != len(model)-verified {
			t.Fatalf("step %d (%s): %d batches from %d, model has %d", step, what, len(got), from, len(model)-verified)
		}
		for i := range got {
			m := model[verified+i]
			if got[i].Base != m.base || !sameRecords(got[i].Records, m.records) {
				t.Fatalf("step %d (%s): batch %d differs (base %d, want %d)", step, what, verified+i, got[i].Base, m.base)
			}
		}
		verified = len(model)
		// A random offset reads from the batch holding it.
		if end > 0 {
			off := rng.Int64N(end)
			r, err := p.Read(off, rng.IntN(4096), true)
			if err != nil {
				t.Fatal(err)
			}
			bs := splitBatches(t, r.Batches)
			if len(bs) == 0 || bs[0].Base > off || bs[0].Base+int64(len(bs[0].Records)) <= off {
				t.Fatalf("step %d: Read(%d) does not start with the batch holding it", step, off)
			}
		}
	}

	var reopens, torn, dups, refused int
	steps := 120
	if testing.Short() {
		steps = 40
	}
	for step := range steps {
		p := e.part("t", 0)
		switch r := rng.IntN(20); {
		case r == 0:
			e.reopen()
			verified = 0
			reopens++
			verify(step, "reopen")
		case r == 1 && len(model) > 0:
			// A torn write at the tail: recovery drops it, nothing else.
			segs := segFiles(t, p)
			last := segs[len(segs)-1]
			e.close()
			o := noProducer()
			o.records = simpleRecords(3, "torn", 1)
			b := makeBatch(t, o)
			cut := rng.IntN(len(b))
			appendFile(t, last, b[:cut])
			e.open()
			verified = 0
			torn++
			verify(step, fmt.Sprintf("torn tail of %d bytes", cut))
		case r <= 5 && len(model) > 0:
			// Resend a recent idempotent batch: a duplicate if it is among
			// its producer's last five.
			i := len(model) - 1 - rng.IntN(min(len(model), 8))
			if rng.IntN(2) == 0 {
				i = rng.IntN(len(model))
			}
			mb := model[i]
			if mb.pid < 0 {
				continue
			}
			recent := 0
			for j := i + 1; j < len(model); j++ {
				if model[j].pid == mb.pid {
					recent++
				}
			}
			res, err := p.Append(bytes.Clone(mb.sent), 0)
			if recent < maxRecentBatches {
				dups++
				if err != nil || !res.Duplicate || res.BaseOffset != mb.base {
					t.Fatalf("step %d: resend of batch at %d = %+v %v", step, mb.base, res, err)
				}
			} else if err == nil {
				t.Fatalf("step %d: resend of an old batch accepted: %+v", step, res)
			} else {
				refused++
			}
			if _, hw := p.Offsets(); hw != end {
				t.Fatalf("step %d: resend moved the end to %d", step, hw)
			}
		default:
			n := 1 + rng.IntN(30)
			if rng.IntN(10) == 0 {
				n = 200 + rng.IntN(200)
			}
			recs := make([]testRecord, n)
			for i := range recs {
				v := make([]byte, rng.IntN(64))
				for j := range v {
					v[j] = byte('a' + rng.IntN(4)) // compressible
				}
				recs[i] = testRecord{Key: fmt.Appendf(nil, "s%d-%d", step, i), Value: v, TS: 1_700_000_000_000 + rng.Int64N(100000)}
			}
			c := codecs[rng.IntN(len(codecs))]
			if rng.IntN(40) == 0 {
				// Rarely: lz4 readers allocate 4 MiB blocks, which is very
				// slow under -race. Other tests cover lz4 more.
				c = kgo.Lz4Compression()
			}
			o := noProducer()
			o.records, o.codec, o.compressed = recs, c, true
			var pr *producer
			if rng.IntN(2) == 0 {
				pr = producers[rng.IntN(len(producers))]
				o.producerID, o.epoch, o.seq = pr.id, pr.epoch, pr.seq
			}
			b := makeBatch(t, o)
			sent := bytes.Clone(b)
			res, err := p.Append(b, 0)
			if err != nil {
				t.Fatalf("step %d: Append: %v", step, err)
			}
			if res.Duplicate || res.BaseOffset != end {
				t.Fatalf("step %d: Append = %+v, want base %d", step, res, end)
			}
			if pr != nil {
				pr.seq = lastSequence(pr.seq, int32(n-1)) + 1
				if pr.seq < 0 {
					pr.seq = 0
				}
			}
			pid := int64(-1)
			if pr != nil {
				pid = pr.id
			}
			model = append(model, modelBatch{base: end, records: recs, sent: sent, pid: pid})
			end += int64(n)
			if rng.IntN(4) == 0 {
				if err := p.Sync(res.End); err != nil {
					t.Fatal(err)
				}
			}
			verify(step, "append")
		}
	}
	t.Logf("segment.bytes %s: %d batches, %d records, %d segments, %d reopens, %d torn tails, %d duplicates, %d stale resends refused",
		segBytes, len(model), end, len(segFiles(t, e.part("t", 0))), reopens, torn, dups, refused)
	verified = 0
	verify(steps, "final")
	e.reopen()
	verified = 0
	verify(steps, "final reopen")
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}
