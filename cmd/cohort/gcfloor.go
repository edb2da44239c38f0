package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// heapFloor is the heap size below which `cohort serve` does not let Go's
// garbage collector start a cycle. A node's live heap is small (about
// 5 MiB during the commit benchmark) while it allocates hundreds of MiB a
// second, so with Go's default (GOGC=100: a cycle whenever the heap
// doubles) it collected about 45 times a second, and the cycles' marking,
// write barriers and assists cost more than the profile's GC lines show.
// Measured out of process on 2 cores (BENCHMARKS.md, "The garbage
// collector"), medians of alternated runs: 64 committers 280,362 →
// 314,792 offsets/s (server CPU 43 → 38 µs per commit); 1,000 committers
// 334,757 → 360,048. A 64 MiB floor did as well at 64 committers and
// nothing at 1,000, whose live heap is about 40 MiB.
const heapFloor = 256 << 20

// maxGCPercent bounds the GOGC the floor sets when the live heap is tiny.
const maxGCPercent = 1 << 20

// gcFloor is the floor `cohort serve` keeps (0: none), for its log line.
var gcFloor uint64

// wantHeapFloor says whether `cohort serve` keeps a heap floor: not when
// the user tunes the collector with GOGC or GOMEMLIMIT, which win as they
// do for any Go program.
func wantHeapFloor(gogc, gomemlimit string) bool {
	return gogc == "" && gomemlimit == ""
}

// gcPercentFor is the GOGC that puts the next cycle's goal at the larger
// of floor and Go's default goal, from what the last cycle measured: the
// live heap and the roots it scanned (goroutine stacks and globals). Go's
// goal is live + (live + roots) × GOGC/100, so a live heap of about
// floor/2 or more gets Go's default (100) and grows no further than it
// would without the floor. Before the first cycle (live 0) it is 100 too.
func gcPercentFor(live, roots, floor uint64) int {
	if live == 0 || live+(live+roots) >= floor {
		return 100
	}
	return int(min((floor-live)*100/(live+roots), maxGCPercent))
}

// keepHeapFloor sets GOGC after every garbage collection so that the next
// one starts when the heap reaches floor, or twice the live heap if that
// is more (gcPercentFor). It learns of each cycle from a cleanup on an
// object that only the cycle frees, and sets GOGC from the live heap that
// cycle measured. Until that cleanup runs (when the sentinel is swept,
// soon after the cycle) the runtime applies the previous GOGC to the new
// live heap, so a live heap that grew k-fold in one cycle has a goal of
// about k × floor for that moment; once it is past floor/2 the goal is
// Go's own. stop ends it and gives Go its default back.
func keepHeapFloor(floor uint64) (stop func()) {
	var mu sync.Mutex // held while GOGC is set
	stopped := false
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
	goal := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	last := -1
	var arm func()
	tune := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live, roots := sample[0].Value.Uint64(), sample[1].Value.Uint64()+sample[2].Value.Uint64()
			if p := gcPercentFor(live, roots, floor); p != last {
				debug.SetGCPercent(p)
				last = p
				// The runtime's own goal can count more roots than the
				// metrics report (right after start it was half as much
				// again): being linear in GOGC, one correction from the
				// goal it reports lands on the floor.
				metrics.Read(goal)
				if g := goal[0].Value.Uint64(); p > 100 && g > live && g > floor+floor/64 {
					if q := max(100, int(uint64(p)*(floor-live)/(g-live))); q != p {
						debug.SetGCPercent(q)
						last = q
					}
				}
			}
		}
		arm()
	}
	arm = func() {
		// A pointer field keeps the sentinel out of the tiny allocator,
		// whose blocks other objects can keep alive.
		type sentinel struct{ _ *int }
		runtime.AddCleanup(&sentinel{}, func(struct{}) { tune() }, struct{}{})
	}
	tune()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		debug.SetGCPercent(100)
	}
}
