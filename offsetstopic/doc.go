// Package offsetstopic serves Kafka's internal __consumer_offsets topic:
// one partition per group coordinator shard, partition p holding shard
// p's records in Kafka's own key and value formats, so that lag tools
// (Burrow and the like) and anything written against Kafka's records can
// read committed offsets and group metadata by consuming it.
//
// # A view of the shard's records, not a log beside them
//
// Each Partition is derived from the shard's records: the runtime hands
// it every record its load found, then every batch once the store has
// made it durable, and the partition gives the records it shows the next
// offsets. It keeps, in memory, one entry per live key (the shard's key
// and value bytes, shared with the records, and translated to Kafka's
// format only when a fetch reads them) and drops an entry when a later
// record has its key: it is a compacted topic, as Kafka's is, with gaps
// where records were superseded. Tombstones stay for a retention (24 h,
// Kafka's delete.retention.ms) so that readers see deletions.
//
// A log written beside the records (segment files of Kafka batches, as
// the topic log keeps) was the alternative, and was not chosen:
//
//   - The store is already the durable copy. A second one, written after
//     it, can lag it at a crash, so a load would have to re-emit the
//     shard's state anyway; and in cluster mode it would live on one
//     node's disk while the shard moves between nodes through etcd.
//   - It would need compaction, which the topic log does not have, or
//     grow without bound at the commit rate.
//   - It costs disk writes and an fsync per batch; the view costs no I/O.
//     The commit path only queues the batch (Durable), after its replies
//     are released; all the work runs on the partition's own goroutine.
//
// The price is memory: about one more copy of the shard's live records
// (and of the tombstones kept), and what a restart forgets (below).
//
// # Only while someone reads
//
// Most nodes have no reader of the topic, and a million quiet groups
// would pay that copy (about 185 bytes per committed offset) for
// nothing. So the coordinator's partitions are lazy (Options.Scan): from
// the load on, a partition counts the offsets its shard's records take
// and holds nothing. A reader's arrival (a fetch, or ListOffsets) wakes
// it: it reads the shard's records from the store and shows them again
// from the next offset on, as a load does, and from then on it holds
// them as above. Once no one has read it for Options.Idle (10 minutes by
// default) it drops them again. The records it shows again were not
// counted by the shard's reservations, so it asks the shard to count
// them (Options.Reserve, a groups.ReserveCmd). A wake is to a reader what
// a restart is: it sees the current state again, and not the deletions
// made while the partition slept.
//
// # Offsets across restarts and failovers
//
// Offsets only grow. The shard's KindOffsetsTopic record reserves them a
// block ahead (ReserveBlock): the shard's machine emits a new reservation
// with its records once half of the last one is used, and the partition shows
// an offset only once a reservation above it is durable. A load starts
// at the stored reservation, above every offset ever shown, and re-emits
// the shard's whole state there as a compacted prefix. A reader resuming
// at an offset from before the restart reads on from the prefix: offsets
// never go backwards and no offset changes meaning; it sees the current
// state again, but not the tombstones of deletions made before the
// restart (Kafka would keep them for delete.retention.ms). The log start
// offset is always 0, so that no reader is ever out of range below.
//
// It must not write to the store itself, block the runtime, or show a
// record before the store has made it durable.
package offsetstopic
