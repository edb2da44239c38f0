package pebble

import pdb "github.com/cockroachdb/pebble"

// CloseUnfolded closes s leaving what its journal's overlay holds for the
// next Open to replay, as a crash would (Close folds it).
func CloseUnfolded(s *Store) error {
	s.j.mu.Lock()
	s.j.noFoldAtClose = true
	s.j.mu.Unlock()
	return s.Close()
}

// Compactions returns how many compactions Pebble under s has finished
// and how many are under way.
func Compactions(s *Store) (done, running int64) {
	m := s.db.Metrics()
	return m.Compact.Count, m.Compact.NumInProgress
}

// Held reports whether s holds compactions (Options.HoldCompactions).
func Held(s *Store) bool { return s.held.Load() }

// L0Sublevels returns the depth of level 0 of Pebble under s.
func L0Sublevels(s *Store) int { return int(s.db.Metrics().Levels[0].Sublevels) }

// DataBlocks returns the number and the total size of the data blocks of
// the tables Pebble under s holds.
func DataBlocks(s *Store) (blocks, bytes uint64, err error) {
	tables, err := s.db.SSTables(pdb.WithProperties())
	if err != nil {
		return 0, 0, err
	}
	for _, level := range tables {
		for _, t := range level {
			blocks += t.Properties.NumDataBlocks
			bytes += t.Properties.DataSize
		}
	}
	return blocks, bytes, nil
}
