// Package powerloss simulates a machine's power supply for crash tests
// that must lose what was not fsynced: a SIGKILL keeps the page cache, a
// power loss does not.
//
// Fsyncs go through a Power: SyncFile for plain files (the topic log's
// segments), which keeps each file's bytes at its last fsync, and FS for
// a Pebble store on vfs.NewStrictMem, which keeps only what was synced.
// Cut makes every later fsync reach nothing, from one instant on, for
// both at once; Restore puts the plain files back to their last fsync
// and turns the power on again.
//
// It is for tests only.
package powerloss

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/vfs"
)

// Power is a power supply. The zero value is not usable: call New.
type Power struct {
	mu  sync.RWMutex // held for reading by every fsync, for writing by Cut
	off bool

	filesMu sync.Mutex // orders SyncFile's copies
	files   map[string][]byte
}

// New returns a power supply that is on.
func New() *Power { return &Power{files: map[string][]byte{}} }

func (p *Power) sync(f func() error) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.off {
		return nil // nothing reaches the disk
	}
	return f()
}

// Cut cuts the power: fsyncs under way finish, later ones do nothing.
func (p *Power) Cut() {
	p.mu.Lock()
	p.off = true
	p.mu.Unlock()
}

// SyncFile fsyncs f and keeps its bytes as Restore will put them back.
// The copies are taken one at a time, so that of two fsyncs of one file
// the copy kept is the later one.
func (p *Power) SyncFile(f *os.File) error {
	return p.sync(func() error {
		p.filesMu.Lock()
		defer p.filesMu.Unlock()
		data, err := os.ReadFile(f.Name())
		if err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		p.files[f.Name()] = data
		return nil
	})
}

// Restore puts every file under dir whose name ends in ext back to its
// last SyncFile (empty if it never had one), and turns the power on.
func (p *Power) Restore(dir, ext string) error {
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || filepath.Ext(path) != ext {
			return err
		}
		return os.WriteFile(path, p.files[path], 0o644)
	})
	p.mu.Lock()
	p.off = false
	p.mu.Unlock()
	return err
}

// FS returns fs with its files' fsyncs behind the power supply, each
// taking slow longer (a busy write-ahead log's).
func (p *Power) FS(fs vfs.FS, slow time.Duration) vfs.FS {
	return cutFS{fs, p, slow}
}

type cutFS struct {
	vfs.FS
	p    *Power
	slow time.Duration
}

func (c cutFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	return cutFile{f, c}, nil
}

func (c cutFS) Create(name string) (vfs.File, error) { return c.wrap(c.FS.Create(name)) }
func (c cutFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return c.wrap(c.FS.Open(name, opts...))
}
func (c cutFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return c.wrap(c.FS.OpenReadWrite(name, opts...))
}
func (c cutFS) OpenDir(name string) (vfs.File, error) { return c.wrap(c.FS.OpenDir(name)) }
func (c cutFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	return c.wrap(c.FS.ReuseForWrite(oldname, newname))
}

type cutFile struct {
	vfs.File
	c cutFS
}

func (f cutFile) sync(do func() error) error {
	time.Sleep(f.c.slow)
	return f.c.p.sync(do)
}

func (f cutFile) Sync() error     { return f.sync(f.File.Sync) }
func (f cutFile) SyncData() error { return f.sync(f.File.SyncData) }
func (f cutFile) SyncTo(n int64) (full bool, err error) {
	err = f.sync(func() error {
		var e error
		full, e = f.File.SyncTo(n)
		return e
	})
	return full, err
}
