// Package memtest is what the tests that measure a structure's heap
// share (issue 34: what a quiet group costs each holder). It imports
// nothing of the project, so that any package's own tests may use it.
package memtest

import "runtime"

// HeapAlloc is the live heap after a full collection.
func HeapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
