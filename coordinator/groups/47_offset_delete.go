package groups

// OffsetDelete, key 47 (KIP-496; offsets.go, docs/kafka-classic-groups.md
// §13): deletes a group's committed offsets for topics it is not
// subscribed to.
//
// Version notes:
//   - v0 is the only version.
//
// As Kafka's KafkaApis, partitions the broker does not have are answered
// UNKNOWN_TOPIC_OR_PARTITION, but the group is consulted even when
// nothing is left, so that group errors still show.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(&API{Key: kmsg.OffsetDelete, GroupACL: kmsg.ACLOperationDelete, MinVersion: 0, MaxVersion: 0,
		Groups: oneGroup(func(r *kmsg.OffsetDeleteRequest) string { return r.Group })},
		(*Shard).offsetDelete,
		func(_ *kmsg.OffsetDeleteRequest, resp *kmsg.OffsetDeleteResponse, code int16) { resp.ErrorCode = code })
}

// offsetDelete is OffsetDelete (offsets.Book.ServeDelete).
func (s *Shard) offsetDelete(_ time.Time, req machine.Request, r *kmsg.OffsetDeleteRequest) {
	s.reply(req.ID, s.offs.ServeDelete(req, r, (*offsetGroups)(s)))
}
