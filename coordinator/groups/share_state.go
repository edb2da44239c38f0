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

// ShareStateDeleted answers ShareStateDeletedCmd: done (a shard that could
// not answer replies with no Out at all).
type ShareStateDeleted struct{}

func (c ShareStateDeletedCmd) serve(s *Shard, now time.Time) any {
	s.share.Deleted(now, c.Tenant, c.Group, c.Topics)
	return ShareStateDeleted{}
}
