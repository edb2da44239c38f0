package etcd

// Test hooks, set before the Store is used.

// SetEntryHook makes s call f with the etcd key of every log entry it reads.
func SetEntryHook(s *Store, f func(key string)) { s.onEntry = f }

// SetRevHook makes s call f once each read has chosen its revision, before
// it reads the logs at it.
func SetRevHook(s *Store, f func(rev int64)) { s.onRev = f }

// SetChunksHook makes s call f once an entry's chunks are written, before
// the entry's commit, with the chunks' directory.
func SetChunksHook(s *Store, f func(dir string)) { s.onChunks = f }

// ViewLen returns the number of records, tombstones included, in s's
// cached view of scope (of the global log if scope is nil), or -1 if none.
func ViewLen(s *Store, scope []byte) int {
	v := s.globalView
	if scope != nil {
		s.viewsMu.Lock()
		v = s.views[string(scope)]
		s.viewsMu.Unlock()
	}
	if v == nil {
		return -1
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.tree.Len()
}
