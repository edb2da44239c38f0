package pebble

// CloseUnfolded closes s leaving what its journal's overlay holds for the
// next Open to replay, as a crash would (Close folds it).
func CloseUnfolded(s *Store) error {
	s.j.mu.Lock()
	s.j.noFoldAtClose = true
	s.j.mu.Unlock()
	return s.Close()
}
