package kafka

// Share sessions (KIP-932): what ShareFetch (78) and ShareAcknowledge
// (79) keep per share group member, as Kafka's ShareSessionCache and
// SharePartitionManager.newContext. A member opens a session with epoch 0
// (a full request, naming every partition it wants; acknowledgements are
// not allowed in it), then sends epochs 1, 2, ... (incremental: the
// partitions named are added, ForgottenTopicsData removed), and closes it
// with -1. A session belongs to the connection that opened it: when that
// connection closes, the session goes and the member's acquired records
// are released (onLeave), as Kafka's ClientConnectionDisconnectListener.
// The cache holds at most maxSessions sessions (Kafka's
// group.share.max.share.sessions); a new one beyond is
// SHARE_SESSION_LIMIT_REACHED.

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Kafka's share session epochs (ShareRequestMetadata).
const (
	shareInitialEpoch int32 = 0
	shareFinalEpoch   int32 = -1
)

// DefaultMaxShareSessions is Kafka's group.share.max.share.sessions.
const DefaultMaxShareSessions = 2000

// nextShareEpoch is Kafka's ShareRequestMetadata.nextEpoch: after the
// largest int32 comes 1, never 0 (which opens a session).
func nextShareEpoch(e int32) int32 {
	switch {
	case e < 0:
		return shareFinalEpoch
	case e == 1<<31-1:
		return 1
	}
	return e + 1
}

// shareSessionKey names a session: the member of a group of a tenant.
type shareSessionKey struct {
	tenant, group, member string
}

// sharePartitionID is a partition in a session: its topic's id and index.
type sharePartitionID struct {
	topic     [16]byte
	partition int32
}

type shareSession struct {
	key   shareSessionKey
	epoch int32 // the epoch the next request must carry
	// parts are the partitions in the session, in the order first named.
	parts []sharePartitionID
	in    map[sharePartitionID]bool
	// owner is the connection that opened it.
	owner any
}

// shareSessions is the cache. Safe for concurrent use.
type shareSessions struct {
	max int
	// onLeave is told of a member whose session went with its connection:
	// its acquired records are to be released. Called without the lock.
	onLeave func(shareSessionKey, []sharePartitionID)

	mu       sync.Mutex
	sessions map[shareSessionKey]*shareSession
	byOwner  map[any]map[shareSessionKey]bool
	parts    int // partitions over every session, for the metrics
}

func newShareSessions(max int, onLeave func(shareSessionKey, []sharePartitionID)) *shareSessions {
	if max <= 0 {
		max = DefaultMaxShareSessions
	}
	return &shareSessions{max: max, onLeave: onLeave, sessions: map[shareSessionKey]*shareSession{}, byOwner: map[any]map[shareSessionKey]bool{}}
}

// shareContext is what a ShareFetch may do once its session is settled:
// the partitions to fetch from (all of the session's), and whether the
// request closed the session (-1: acknowledgements only, nothing
// fetched).
type shareContext struct {
	parts []sharePartitionID
	final bool
}

// fetch settles a ShareFetch's session, as Kafka's newContext: epoch 0
// replaces any session of the member with a new one of the partitions
// named (acknowledgements refused: INVALID_REQUEST); -1 ends it (it must
// exist); another epoch must be the session's (else
// INVALID_SHARE_SESSION_EPOCH; no session: SHARE_SESSION_NOT_FOUND) and
// adds and forgets partitions. A code other than 0 changes nothing.
func (c *shareSessions) fetch(owner any, key shareSessionKey, epoch int32, named, forgotten []sharePartitionID, acks bool) (shareContext, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[key]
	switch {
	case epoch == shareFinalEpoch:
		if s == nil {
			return shareContext{}, kerr.ShareSessionNotFound.Code
		}
		c.removeLocked(s)
		return shareContext{parts: s.parts, final: true}, 0
	case epoch == shareInitialEpoch:
		if acks {
			return shareContext{}, kerr.InvalidRequest.Code
		}
		if s != nil {
			c.removeLocked(s)
		}
		if len(c.sessions) >= c.max {
			return shareContext{}, kerr.ShareSessionLimitReached.Code
		}
		s = &shareSession{key: key, epoch: nextShareEpoch(shareInitialEpoch), in: map[sharePartitionID]bool{}, owner: owner}
		s.add(named)
		c.sessions[key] = s
		if c.byOwner[owner] == nil {
			c.byOwner[owner] = map[shareSessionKey]bool{}
		}
		c.byOwner[owner][key] = true
		c.parts += len(s.parts)
		return shareContext{parts: s.partsCopy()}, 0
	case s == nil:
		return shareContext{}, kerr.ShareSessionNotFound.Code
	case s.epoch != epoch:
		return shareContext{}, kerr.InvalidShareSessionEpoch.Code
	}
	before := len(s.parts)
	s.add(named)
	s.forget(forgotten)
	c.parts += len(s.parts) - before
	s.epoch = nextShareEpoch(s.epoch)
	return shareContext{parts: s.partsCopy()}, 0
}

// acknowledge settles a ShareAcknowledge's session, as Kafka's
// acknowledgeSessionUpdate: epoch 0 is INVALID_SHARE_SESSION_EPOCH; the
// session must exist (SHARE_SESSION_NOT_FOUND); -1 closes it (closed, with
// its partitions, whose records the member holds are then released,
// after the acknowledgements); another epoch must be the session's and
// moves it on.
func (c *shareSessions) acknowledge(key shareSessionKey, epoch int32) (parts []sharePartitionID, closed bool, code int16) {
	if epoch == shareInitialEpoch {
		return nil, false, kerr.InvalidShareSessionEpoch.Code
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[key]
	switch {
	case s == nil:
		return nil, false, kerr.ShareSessionNotFound.Code
	case epoch == shareFinalEpoch:
		c.removeLocked(s)
		return s.parts, true, 0
	case s.epoch != epoch:
		return nil, false, kerr.InvalidShareSessionEpoch.Code
	}
	s.epoch = nextShareEpoch(s.epoch)
	return nil, false, 0
}

// closed drops the sessions owner opened and tells onLeave of each
// member.
func (c *shareSessions) closed(owner any) {
	c.mu.Lock()
	var gone []*shareSession
	for key := range c.byOwner[owner] {
		if s := c.sessions[key]; s != nil && s.owner == owner {
			c.removeLocked(s)
			gone = append(gone, s)
		}
	}
	delete(c.byOwner, owner)
	c.mu.Unlock()
	if c.onLeave != nil {
		for _, s := range gone {
			c.onLeave(s.key, s.parts)
		}
	}
}

// stats are the sessions and their partitions, for the metrics.
func (c *shareSessions) stats() (sessions, partitions int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions), c.parts
}

func (c *shareSessions) removeLocked(s *shareSession) {
	delete(c.sessions, s.key)
	if owned := c.byOwner[s.owner]; owned != nil {
		delete(owned, s.key)
		if len(owned) == 0 {
			delete(c.byOwner, s.owner)
		}
	}
	c.parts -= len(s.parts)
}

func (s *shareSession) add(parts []sharePartitionID) {
	for _, p := range parts {
		if !s.in[p] {
			s.in[p] = true
			s.parts = append(s.parts, p)
		}
	}
}

func (s *shareSession) forget(parts []sharePartitionID) {
	drop := false
	for _, p := range parts {
		if s.in[p] {
			delete(s.in, p)
			drop = true
		}
	}
	if !drop {
		return
	}
	kept := s.parts[:0]
	for _, p := range s.parts {
		if s.in[p] {
			kept = append(kept, p)
		}
	}
	s.parts = kept
}

func (s *shareSession) partsCopy() []sharePartitionID {
	return append([]sharePartitionID(nil), s.parts...)
}
