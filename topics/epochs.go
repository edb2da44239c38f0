package topics

// Leader epochs (KIP-101, KIP-320). A partition's leader epoch rises each
// time its node starts serving it again (global.BumpLeaderEpochs, at the
// node's start); the partition keeps, as Kafka's LeaderEpochFileCache,
// the offset each epoch began at, in the file leader-epochs of its
// directory. Appended batches carry the epoch they were appended in, and
// OffsetForLeaderEpoch answers from the file, so a client that read up to
// some offset in some epoch can check its position against the log.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const epochsFile = "leader-epochs"

// epochEntry is an epoch and the first offset appended in it.
type epochEntry struct {
	epoch int32
	start int64
}

// loadEpochs reads a partition's epochs, oldest first. A partition
// without the file (one made before leader epochs were kept) has had
// epoch 0 from offset 0.
func loadEpochs(dir string) ([]epochEntry, error) {
	b, err := os.ReadFile(filepath.Join(dir, epochsFile))
	if errors.Is(err, os.ErrNotExist) {
		return []epochEntry{{0, 0}}, nil
	}
	if err != nil {
		return nil, err
	}
	var out []epochEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			return nil, fmt.Errorf("%w: %s: line %q", ErrCorrupt, epochsFile, sc.Text())
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 ||
			len(out) > 0 && (int32(e) <= out[len(out)-1].epoch || o < out[len(out)-1].start) {
			return nil, fmt.Errorf("%w: %s: line %q", ErrCorrupt, epochsFile, sc.Text())
		}
		out = append(out, epochEntry{int32(e), o})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s is empty", ErrCorrupt, epochsFile)
	}
	return out, nil
}

// saveEpochs replaces the file atomically: a temporary file, synced,
// renamed over it, and the directory synced.
func saveEpochs(dir string, entries []epochEntry, sync func(*os.File) error) error {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.epoch, e.start)
	}
	tmp := filepath.Join(dir, epochsFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	if err := sync(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, epochsFile)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// endOffsetFor is Kafka's LeaderEpochFileCache.endOffsetFor: the largest
// epoch at most requested and the offset the next epoch began at (the
// log end for the latest epoch); (-1, -1) for an epoch above every one
// known or -1.
func endOffsetFor(entries []epochEntry, requested int32, logEnd int64) (int32, int64) {
	if requested < 0 || len(entries) == 0 {
		return -1, -1
	}
	if last := entries[len(entries)-1]; requested == last.epoch {
		return requested, logEnd
	}
	for i, e := range entries {
		if e.epoch > requested {
			if i == 0 {
				return requested, e.start // below every epoch known
			}
			return entries[i-1].epoch, e.start
		}
	}
	return -1, -1
}

// epochAt is the epoch offset off was appended in (the first epoch for
// an offset before every entry).
func epochAt(entries []epochEntry, off int64) int32 {
	epoch := entries[0].epoch
	for _, e := range entries {
		if e.start > off {
			break
		}
		epoch = e.epoch
	}
	return epoch
}

// assignEpoch is Kafka's LeaderEpochFileCache.assign: epoch begins at
// start, and an earlier epoch that began there or later (one in which
// nothing was appended) is dropped. An epoch not above the latest
// changes nothing.
func assignEpoch(entries []epochEntry, epoch int32, start int64) ([]epochEntry, bool) {
	if len(entries) > 0 && epoch <= entries[len(entries)-1].epoch {
		return entries, false
	}
	for len(entries) > 0 && entries[len(entries)-1].start >= start {
		entries = entries[:len(entries)-1]
	}
	return append(entries, epochEntry{epoch, start}), true
}

// openEpochs reads the partition's epochs once its log is recovered: an
// epoch that began past the recovered end (its records torn off by a
// crash, never acknowledged) is dropped.
func (p *Partition) openEpochs() error {
	entries, err := loadEpochs(p.dir)
	if err != nil {
		return err
	}
	for len(entries) > 1 && entries[len(entries)-1].start > p.end {
		entries = entries[:len(entries)-1]
	}
	p.epochs = entries
	return nil
}

// setEpoch makes epoch the partition's leader epoch from its log end on,
// durably, if it is above the current one.
func (p *Partition) setEpoch(epoch int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	entries, ok := assignEpoch(p.epochs, epoch, p.end)
	if !ok {
		return nil
	}
	if err := saveEpochs(p.dir, entries, p.syncFile); err != nil {
		return fmt.Errorf("leader epoch %d of %s-%d: %w", epoch, p.Topic, p.Index, err)
	}
	p.epochs = entries
	return nil
}

// LeaderEpoch is the partition's current leader epoch.
func (p *Partition) LeaderEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epochs[len(p.epochs)-1].epoch
}

// EndOffsetFor answers OffsetForLeaderEpoch for an epoch (endOffsetFor).
func (p *Partition) EndOffsetFor(epoch int32) (int32, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return endOffsetFor(p.epochs, epoch, p.end)
}

// EpochAt is the leader epoch offset off was appended in.
func (p *Partition) EpochAt(off int64) int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return epochAt(p.epochs, off)
}
