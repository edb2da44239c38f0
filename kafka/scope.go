package kafka

// Topics scoped by organisation. Two organisations may each have a topic
// "events": the topic log (package topics) knows one flat namespace, so a
// non-default tenant's topic is kept there under the internal name
// "<tenant>/<name>". '/' is not legal in a Kafka topic name, so an
// internal name can neither collide with a default-organisation topic nor
// be named by a client; the default organisation's topics keep their
// plain names, so data written before organisations stays its.
//
// Names are mapped in and out at the Kafka boundary, here and nowhere
// else: every handler that carries topic names or ids asks its request's
// scope for topics and never the log directly. What a client sees (names
// in responses, ACL resource names, committed offsets) is always the
// external name.

import (
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scope is one tenant's view of the topic log.
type scope struct {
	tenant string
	s      *Server
}

// scope is the view of the topic log of the organisation hdr's
// connection acts for.
func (s *Server) scope(hdr *reqHeader) scope { return scope{tenant: hdr.tenant(), s: s} }

// in is the log's name of the scope's topic name.
func (sc scope) in(name string) string { return topics.Internal(sc.tenant, name) }

// out is the scope's name of a log topic, false if another tenant owns
// it.
func (sc scope) out(internal string) (string, bool) {
	t, name := topics.Owner(internal)
	if t != sc.tenant {
		return "", false
	}
	return name, true
}

// topic is the scope's topic of that name, nil if it has none. A name
// that is not a legal Kafka topic name (one with '/', forging another
// tenant's, even from the default organisation) has none.
func (sc scope) topic(name string) *topics.Topic {
	if !topics.ValidTopicName(name) {
		return nil
	}
	return sc.s.topics.Topic(sc.in(name))
}

// topicByID is the scope's topic with that id, nil if there is none or
// another tenant owns it (answered UNKNOWN_TOPIC_ID, as an id that does
// not exist).
func (sc scope) topicByID(id [16]byte) *topics.Topic {
	t := sc.s.topics.TopicByID(id)
	if t == nil {
		return nil
	}
	if _, ok := sc.out(t.Name); !ok {
		return nil
	}
	return t
}

// topicFor finds the topic a produce or fetch names: by id from the
// version that names topics by id (KIP-516), else by name. Nil if the
// scope has none.
func (sc scope) topicFor(name string, id [16]byte, byID bool) *topics.Topic {
	if byID {
		return sc.topicByID(id)
	}
	return sc.topic(name)
}

// name is the external name of t, a topic of the scope.
func (sc scope) name(t *topics.Topic) string {
	n, _ := sc.out(t.Name)
	return n
}

// all is the scope's topics, by name.
func (sc scope) all() []*topics.Topic {
	var out []*topics.Topic
	for _, t := range sc.s.topics.Topics() {
		if _, ok := sc.out(t.Name); ok {
			out = append(out, t)
		}
	}
	return out
}

// isOffsets reports whether a request names __consumer_offsets, which
// only the default organisation has.
func (sc scope) isOffsets(name string, id [16]byte, byID bool) bool {
	return sc.tenant == "" && sc.s.isOffsetsTopic(name, id, byID)
}

// tenantTag is the tagged field (in an entry's unknown tags) with which
// one Cohort node tells another the organisation a node-to-node request
// acts for (AddPartitionsToTxn v4, the verification of a transactional
// produce in cluster mode): Kafka's brokers' requests have no place for
// it, since Kafka has no organisations. Far above Kafka's own tag
// numbers; absent for the default organisation, so that the request is
// Kafka's own then.
const tenantTag = 0x636f68 // "coh"

// tagTenant tags tags with tenant, unless it is the default one.
func tagTenant(tags *kmsg.Tags, tenant string) {
	if tenant != "" {
		tags.Set(tenantTag, []byte(tenant))
	}
}

// peerTenant is the organisation a node-to-node request's entry acts for:
// its tenantTag, believed only from a connection of the default
// organisation (the nodes' own principals) allowed CLUSTER_ACTION by an
// authorizer; any other connection acts for its own organisation
// whatever it sends. Without an authorizer nobody can be told from a
// node, so the tag is never believed: organisations' transactions across
// nodes then need --authorizer, with the nodes' principals super users.
func (s *Server) peerTenant(hdr *reqHeader, tags *kmsg.Tags) string {
	if t := hdr.tenant(); t != "" || s.cfg.Authorizer == nil || !s.authorizeCluster(hdr, kmsg.ACLOperationClusterAction) {
		return t
	}
	tenant := ""
	tags.Each(func(k uint32, v []byte) {
		if k == tenantTag {
			tenant = string(v)
		}
	})
	return tenant
}

// entryScope is the scope of one topic entry of a request: the
// organisation its tenantTag names where peerTenant believes it (a node
// writing or reading another organisation's dead letters on the
// partition's leader, share_dlq.go), else sc, the connection's. An entry
// with no tag costs no authorization check.
func (s *Server) entryScope(sc scope, hdr *reqHeader, tags *kmsg.Tags) scope {
	if tags.Len() == 0 {
		return sc
	}
	if t := s.peerTenant(hdr, tags); t != sc.tenant {
		return scope{tenant: t, s: s}
	}
	return sc
}
