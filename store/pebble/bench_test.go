package pebble_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/pebble"
)

// BenchmarkApply measures synced single-key (~100 byte) Applies from
// concurrent writers. fsyncs/op is counted on the journal itself: near 1 means
// no group commit, well below 1 means concurrent commits share fsyncs.
func BenchmarkApply(b *testing.B) {
	benchApply(b, func(s *pebble.Store) func(*store.Batch) error { return s.Apply })
}

// BenchmarkHandleApply is BenchmarkApply with every writer writing through
// one store.Handle (one shard's writers, contending for its fence), to show
// that handle writes cost what plain ones do and still share fsyncs.
func BenchmarkHandleApply(b *testing.B) {
	benchApply(b, func(s *pebble.Store) func(*store.Batch) error {
		h, err := s.Acquire([]byte("key/"))
		if err != nil {
			b.Fatal(err)
		}
		return h.Apply
	})
}

func benchApply(b *testing.B, applier func(*pebble.Store) func(*store.Batch) error) {
	for _, writers := range []int{1, 64, 1000} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			fs := &walSyncCounter{FS: vfs.Default}
			s, err := pebble.Open(b.TempDir(), pebble.Options{FS: fs})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			apply := applier(s)
			value := bytes.Repeat([]byte("v"), 100)

			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			fs.syncs.Store(0)
			for range writers {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						var bt store.Batch
						bt.Put(fmt.Appendf(nil, "key/%012d", i), value)
						if err := apply(&bt); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			b.ReportMetric(float64(fs.syncs.Load())/float64(b.N), "fsyncs/op")
		})
	}
}

// BenchmarkApplyAsync measures one writer keeping up to 16 single-key
// batches in flight, as the coordinator's shard writer does, through the
// Store (store.Pipeliner) or through a store.Handle.
func BenchmarkApplyAsync(b *testing.B) {
	const window = 16
	for _, via := range []string{"store", "handle"} {
		b.Run("via="+via, func(b *testing.B) {
			fs := &walSyncCounter{FS: vfs.Default}
			s, err := pebble.Open(b.TempDir(), pebble.Options{FS: fs})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			applyAsync := s.ApplyAsync
			if via == "handle" {
				h, err := s.Acquire([]byte("key/"))
				if err != nil {
					b.Fatal(err)
				}
				applyAsync = h.ApplyAsync
			}
			value := bytes.Repeat([]byte("v"), 100)

			var waits []func() error
			wait := func() {
				if err := waits[0](); err != nil {
					b.Fatal(err)
				}
				waits = waits[1:]
			}
			b.ResetTimer()
			fs.syncs.Store(0)
			for i := range b.N {
				if len(waits) == window {
					wait()
				}
				var bt store.Batch
				bt.Put(fmt.Appendf(nil, "key/%012d", i), value)
				w, err := applyAsync(&bt)
				if err != nil {
					b.Fatal(err)
				}
				waits = append(waits, w)
			}
			for len(waits) > 0 {
				wait()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			b.ReportMetric(float64(fs.syncs.Load())/float64(b.N), "fsyncs/op")
		})
	}
}

// walSyncCounter counts data syncs of *.log files: the journal's segments
// (and Pebble's WAL, which only the journal's folds write).
type walSyncCounter struct {
	vfs.FS
	syncs atomic.Int64
}

func (c *walSyncCounter) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return countedFile{f, &c.syncs}, nil
}

func (c *walSyncCounter) Create(name string) (vfs.File, error) {
	f, err := c.FS.Create(name)
	return c.wrap(name, f, err)
}

// ReuseForWrite is how the journal (and Pebble) reuse an old file as a new
// one.
func (c *walSyncCounter) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := c.FS.ReuseForWrite(oldname, newname)
	return c.wrap(newname, f, err)
}

type countedFile struct {
	vfs.File
	n *atomic.Int64
}

func (f countedFile) Sync() error     { f.n.Add(1); return f.File.Sync() }
func (f countedFile) SyncData() error { f.n.Add(1); return f.File.SyncData() }
