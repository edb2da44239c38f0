package etcd

// Test hooks, set before the Store is used.

// SetEntryHook makes s call f with the etcd key of every log entry it reads.
func SetEntryHook(s *Store, f func(key string)) { s.onEntry = f }

// SetRevHook makes s call f once each read has chosen its revision, before
// it reads the logs at it.
func SetRevHook(s *Store, f func(rev int64)) { s.onRev = f }
