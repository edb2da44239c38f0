package sharecoord

// Watching is the number of (watch, partition) entries held: what a
// watch costs while it waits.
func (h *Host) Watching() int { return int(h.watch.n.Load()) }

// WatchedPartitions is the number of partitions with a watch.
func (h *Host) WatchedPartitions() int {
	n := 0
	for i := range h.watch.s {
		st := &h.watch.s[i]
		st.mu.Lock()
		n += len(st.m)
		st.mu.Unlock()
	}
	return n
}
