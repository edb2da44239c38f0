package groups

// The share groups' side of the share-partition state (KIP-932): what the
// host of coordinator/sharestate and the share APIs (ShareFetch,
// ShareAcknowledge) ask a group shard, as commands (machine.Request.Cmd)
// answered in the reply's Out.
//
//   - ShareMemberCmd: may this member fetch, and what is it assigned
//     (ShareFetch checks its member here: GROUP_ID_NOT_FOUND or
//     UNKNOWN_MEMBER_ID otherwise, and its epoch and partitions).
//   - ShareDeletionsCmd: the share-partition state deleted share groups
//     left to drop. DeleteGroups deletes an empty share group at once and
//     keeps its partitions in the group name's ShareGroupPartitions
//     record (Deleting); the host sends sharestate.DeleteCmd for each of
//     them, then ShareStateDeletedCmd. Until then those topics are not
//     assigned to a new group of the same name, which therefore never
//     reads the old group's state.
//   - ShareStateDeletedCmd: the state of those topics is gone.
//   - ShareOffsetsCmd, ShareAlterCmd, ShareDeleteCmd: the group's side of
//     the share group offset APIs (DescribeShareGroupOffsets,
//     AlterShareGroupOffsets, DeleteShareGroupOffsets): the partitions
//     whose state the group may hold, and the checks and the record
//     changes before the wire server alters or deletes their state; a
//     deletion ends with ShareStateDeletedCmd, as a deleted group's does.
//
// The share-state host's side is node/share_hooks.go: it asks
// ShareDeletionsCmd of every group shard when it loads and after a
// DeleteGroups that deleted a share group (observe.GroupDeleted), sends
// a sharestate.DeleteCmd per partition to its share-state shard, and
// answers with ShareStateDeletedCmd once they are durable; and it turns a
// share member's leaving or expiry (the group events MemberLeft and
// MemberExpired of protocol "share") into a sharestate.ReleaseCmd.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/share"
	"github.com/cohort-dev/cohort/record"
)

// shareCmd is a command the share type answers.
type shareCmd interface {
	serve(s *Shard, now time.Time) any
}

// ShareMemberCmd asks about a share group's member; it is answered with
// ShareMember. It writes nothing.
type ShareMemberCmd struct {
	Tenant, Group, Member string
}

// ShareMember answers ShareMemberCmd: Code is 0, GROUP_ID_NOT_FOUND (no
// share group of that id) or UNKNOWN_MEMBER_ID; Epoch and Assigned (by
// topic id, partitions ascending; shared, read-only) are the member's.
type ShareMember struct {
	Code     int16
	Epoch    int32
	Assigned []record.TopicPartitions
}

func (c ShareMemberCmd) serve(s *Shard, _ time.Time) any {
	code, epoch, a := s.share.MemberOf(c.Tenant, c.Group, c.Member)
	return ShareMember{Code: code, Epoch: epoch, Assigned: a.Records()}
}

// ShareDeletionsCmd asks for the share-partition state deleted share
// groups left to drop; it is answered with []ShareDeletion, by tenant and
// group. It writes nothing.
type ShareDeletionsCmd struct{}

// ShareDeletion is one group name's share-partition state to drop: every
// (topic id, partition) of Topics.
type ShareDeletion struct {
	Tenant, Group string
	Topics        []record.ShareStateTopic
}

func (ShareDeletionsCmd) serve(s *Shard, _ time.Time) any {
	var out []ShareDeletion
	for _, d := range s.share.Deletions() {
		out = append(out, ShareDeletion{Tenant: d.Tenant, Group: d.Group, Topics: d.Topics})
	}
	return out
}

// ShareStateDeletedCmd says that the share-state shards dropped the state
// of these topics of a group name (every partition ShareDeletionsCmd
// listed for them); it is answered, once durable, with
// ShareStateDeleted.
type ShareStateDeletedCmd struct {
	Tenant, Group string
	Topics        [][16]byte
}

// ShareStateDeleted answers ShareStateDeletedCmd (a reply a shard that
// gave the command up cannot be mistaken for).
type ShareStateDeleted struct{}

func (c ShareStateDeletedCmd) serve(s *Shard, now time.Time) any {
	s.share.Deleted(now, c.Tenant, c.Group, c.Topics)
	return ShareStateDeleted{}
}

// ShareOffsetsCmd asks for the partitions whose share-partition state a
// group name may hold (its ShareGroupPartitions record's Initialized
// list): DescribeShareGroupOffsets of every partition. It is answered
// with ShareOffsets and writes nothing.
type ShareOffsetsCmd struct {
	Tenant, Group string
}

// ShareOffsets answers ShareOffsetsCmd: the partitions by topic id
// (shared, read-only), none for a name with no record. As Kafka's
// initializedShareGroupPartitions, there is no error: a group that does
// not exist, or is not a share group, has none.
type ShareOffsets struct {
	Initialized []record.ShareStateTopic
}

func (c ShareOffsetsCmd) serve(s *Shard, _ time.Time) any {
	return ShareOffsets{Initialized: s.share.Initialized(c.Tenant, c.Group)}
}

// ShareAlterCmd is the group's side of AlterShareGroupOffsets: Topics are
// the partitions (of existing topics, in range) about to be given a new
// start offset. It is answered, once durable, with ShareAltered.
type ShareAlterCmd struct {
	Tenant, Group string
	Topics        []record.ShareStateTopic
}

// ShareAltered answers ShareAlterCmd. Code is 0, GROUP_ID_NOT_FOUND (no
// share group of that id) or NON_EMPTY_GROUP, with Kafka's Message; on
// 0 the partitions are listed as the group's. Drop is the state of other
// partitions of those topics that a deleted group (or an unfinished
// DeleteShareGroupOffsets) left: the caller deletes it, then sends
// ShareStateDeletedCmd for its topics.
type ShareAltered struct {
	Code    int16
	Message string
	Drop    []record.ShareStateTopic
}

func (c ShareAlterCmd) serve(s *Shard, now time.Time) any {
	code, msg, drop := s.share.AlterOffsets(now, c.Tenant, c.Group, c.Topics)
	return ShareAltered{Code: code, Message: msg, Drop: drop}
}

// ShareDeleteCmd is the group's side of DeleteShareGroupOffsets: the
// topics named (resolved against the catalog). It is answered, once
// durable, with ShareDeleted.
type ShareDeleteCmd struct {
	Tenant, Group string
	Topics        []share.OffsetsTopic
}

// ShareDeleted answers ShareDeleteCmd. Code is 0, GROUP_ID_NOT_FOUND or
// NON_EMPTY_GROUP, with Kafka's Message. On 0, Codes and Drop have one
// entry per topic: Code 0 for a topic whose state the group holds, now
// Deleting with the partitions in Drop (the caller deletes their state,
// then sends ShareStateDeletedCmd), or UNKNOWN_TOPIC_OR_PARTITION
// (share.NoOffsetInformation).
type ShareDeleted struct {
	Code    int16
	Message string
	Codes   []int16
	Drop    []record.ShareStateTopic
}

func (c ShareDeleteCmd) serve(s *Shard, now time.Time) any {
	code, msg, codes, drop := s.share.DeleteOffsets(now, c.Tenant, c.Group, c.Topics)
	return ShareDeleted{Code: code, Message: msg, Codes: codes, Drop: drop}
}
