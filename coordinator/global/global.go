// Package global is the pure state machine of the global unit: the
// durable state every node needs and no group shard owns, SCRAM
// credentials, ACLs, organisations and their members, client quotas, the
// topic catalog, the cluster's meta and the dynamic configs (record
// kinds 20 to 27, under record.GlobalShard). It runs on the same runtime
// as the group shards, under the one record rule of
// coordinator/machine: a command emits records, and Replay is the only
// code that changes the state, live or at load. The authorizer, the
// credential lookup, the organisations and the quotas that the wire
// server and the admin API read are views of it: each gets a Snapshot of
// the state whenever the records that change it are durable (coordinator.GlobalUnit).
//
// It must not do I/O, read a clock, log, start goroutines or take locks.
package global

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
)

// Errors of the organisation commands, the reply's Out.
var (
	ErrOrgExists   = errors.New("organisation already exists")
	ErrOrgNotFound = errors.New("no such organisation")
	ErrOrgNotEmpty = errors.New("organisation still has members")
)

// The commands the machine serves (machine.Request.Cmd). Each is
// validated by the caller as Kafka validates the request it comes from;
// the machine checks only what depends on the state.
type (
	// CreateACLs stores bindings (an existing one stays one). Out: nil.
	CreateACLs struct{ ACLs []record.ACL }
	// DeleteACLs deletes every binding each filter selects. Out:
	// [][]record.ACL, each filter's, in key order.
	DeleteACLs struct{ Filters []ACLFilter }
	// AlterCredentials upserts (Cred set) or deletes (Cred nil) users'
	// SCRAM credentials. Out: nil.
	AlterCredentials struct{ Changes []CredentialChange }
	// CreateOrg makes an organisation, created now. Out: nil, or
	// ErrOrgExists.
	CreateOrg struct{ Name string }
	// DeleteOrg removes an organisation that has no members left. Out:
	// nil, ErrOrgNotFound or ErrOrgNotEmpty.
	DeleteOrg struct{ Name string }
	// SetMember puts Principal in the organisation Org, moving it from
	// any other; Org "" (the default organisation) takes it out of every
	// other. Out: nil or ErrOrgNotFound.
	SetMember struct{ Org, Principal string }
	// AlterQuotas sets or removes quota values. Out: nil.
	AlterQuotas struct{ Changes []QuotaChange }
	// EnsureMeta stores Value as the meta value Name unless it has one.
	// Out: the value stored ([]byte).
	EnsureMeta struct {
		Name  string
		Value []byte
	}
	// ReserveIDs reserves N ids of the counter Name (a meta value, the
	// next id never handed out, as 8 bytes big-endian). Out: the first
	// (int64).
	ReserveIDs struct {
		Name string
		N    int64
	}
	// CreateTopic makes a topic (topics.go). Out: record.Topic, or
	// ErrTopicExists.
	CreateTopic struct {
		Name       string
		ID         [16]byte
		Partitions int32
		// Leaders, if set, leads each partition; else they are spread
		// over Live (Place).
		Leaders []int32
		Configs map[string]string
		Placement
	}
	// DeleteTopic deletes a topic. Out: the record.Topic deleted, or
	// ErrUnknownTopic.
	DeleteTopic struct{ Name string }
	// BumpLeaderEpochs raises the leader epoch of every partition Node
	// leads: it starts serving them again (after a start, in cluster mode
	// after it was taken for dead), so clients validate their positions
	// (KIP-320). Out: nil.
	BumpLeaderEpochs struct{ Node int32 }
	// GrowTopic raises a topic's partition count to Count. Out:
	// record.Topic, ErrUnknownTopic or ErrInvalidPartitions.
	GrowTopic struct {
		Name  string
		Count int32
		// Leaders, if set, leads each new partition, in order.
		Leaders []int32
		Placement
	}
)

// CredentialChange is one upsertion (Cred set) or deletion (Cred nil).
type CredentialChange struct {
	Key  record.CredentialKey
	Cred *record.ScramCredential
}

// QuotaChange sets Quota's value, or removes its record.
type QuotaChange struct {
	Quota  record.Quota
	Value  float64
	Remove bool
}

// State is the global unit's state. It implements machine.Machine.
type State struct {
	acls    map[string]record.ACL // by key
	creds   map[record.CredentialKey]record.ScramCredential
	orgs    map[string]record.Org
	members map[string]string // principal → organisation
	quotas  map[record.Quota]float64
	topics  map[string]record.Topic
	meta    map[string][]byte
	configs map[record.ConfigResource]map[string]string

	rec machine.Recorder
}

// New returns an empty state.
func New() *State {
	s := &State{
		acls:    map[string]record.ACL{},
		creds:   map[record.CredentialKey]record.ScramCredential{},
		orgs:    map[string]record.Org{},
		members: map[string]string{},
		quotas:  map[record.Quota]float64{},
		topics:  map[string]record.Topic{},
		meta:    map[string][]byte{},
		configs: map[record.ConfigResource]map[string]string{},
	}
	s.rec.Replay = s.Replay
	return s
}

var (
	_ machine.Machine = (*State)(nil)
	_ machine.Durable = (*State)(nil)
)

// Replay applies one record: the only code that changes the state.
func (s *State) Replay(r machine.Record) error {
	prefix := record.ShardPrefix(record.GlobalShard)
	if len(r.Key) <= len(prefix) || string(r.Key[:len(prefix)]) != string(prefix) {
		return fmt.Errorf("global: key %q is not the global unit's", r.Key)
	}
	switch record.Kind(r.Key[len(prefix)]) {
	case record.KindACL:
		acl, err := record.ParseACLKey(r.Key)
		if err != nil {
			return err
		}
		return set(s.acls, string(r.Key), r.Value, func([]byte) (record.ACL, error) { return acl, nil })
	case record.KindScramCredential:
		return replayKind(s.creds, r, record.ParseCredentialKey, record.DecodeScramCredential)
	case record.KindOrg:
		return replayKind(s.orgs, r, record.ParseOrgKey, record.DecodeOrg)
	case record.KindOrgMember:
		return replayKind(s.members, r, record.ParseOrgMemberKey, func(v []byte) (string, error) {
			m, err := record.DecodeOrgMember(v)
			return m.Org, err
		})
	case record.KindQuota:
		return replayKind(s.quotas, r, record.ParseQuotaKey, record.DecodeQuotaValue)
	case record.KindTopic:
		return replayKind(s.topics, r, record.ParseTopicKey, record.DecodeTopic)
	case record.KindMeta:
		return replayKind(s.meta, r, record.ParseMetaKey, record.DecodeMetaValue)
	case record.KindConfig:
		return replayKind(s.configs, r, record.ParseConfigKey, record.DecodeConfigs)
	}
	return fmt.Errorf("global: record kind %d is not the global unit's", r.Key[len(prefix)])
}

// replayKind applies a record of one kind to its map: the key parsed, a
// tombstone deleting it, a value decoded and set.
func replayKind[K comparable, V any](m map[K]V, r machine.Record, parse func([]byte) (K, error), decode func([]byte) (V, error)) error {
	k, err := parse(r.Key)
	if err != nil {
		return err
	}
	return set(m, k, r.Value, decode)
}

// set deletes k for a tombstone (v nil), else sets it to v decoded.
func set[K comparable, V any](m map[K]V, k K, v []byte, decode func([]byte) (V, error)) error {
	if v == nil {
		delete(m, k)
		return nil
	}
	d, err := decode(v)
	if err != nil {
		return err
	}
	m[k] = d
	return nil
}

// Loaded does nothing: the global unit has no soft state and no timers.
func (s *State) Loaded(time.Time) machine.Output { return machine.Output{} }

// Fire does nothing: the global unit sets no timers.
func (s *State) Fire(time.Time, string) machine.Output { return machine.Output{} }

// Handle serves one command.
func (s *State) Handle(now time.Time, req machine.Request) machine.Output {
	var out any
	switch c := req.Cmd.(type) {
	case CreateACLs:
		for _, acl := range c.ACLs {
			if k := acl.Key(); !s.hasACL(k) {
				s.rec.Emit(k, record.ACLValue())
			}
		}
	case DeleteACLs:
		// Every filter's answer is of the bindings before the request,
		// as Kafka's: two filters selecting one binding both report it.
		res := make([][]record.ACL, len(c.Filters))
		for i, f := range c.Filters {
			res[i] = s.MatchACLs(f)
		}
		for _, acls := range res {
			for _, acl := range acls {
				if k := acl.Key(); s.hasACL(k) {
					s.rec.Emit(k, nil)
				}
			}
		}
		out = res
	case AlterCredentials:
		for _, ch := range c.Changes {
			if ch.Cred == nil {
				if _, ok := s.creds[ch.Key]; ok {
					s.rec.Emit(ch.Key.Key(), nil)
				}
				continue
			}
			s.rec.Emit(ch.Key.Key(), ch.Cred.Encode())
		}
	case CreateOrg:
		if _, ok := s.orgs[c.Name]; ok {
			out = fmt.Errorf("%w: %s", ErrOrgExists, c.Name)
			break
		}
		s.rec.Emit(record.OrgKey(c.Name), record.Org{CreatedMs: now.UnixMilli()}.Encode())
	case DeleteOrg:
		if _, ok := s.orgs[c.Name]; !ok {
			out = fmt.Errorf("%w: %s", ErrOrgNotFound, c.Name)
			break
		}
		if s.hasMembers(c.Name) {
			out = fmt.Errorf("%w: %s", ErrOrgNotEmpty, c.Name)
			break
		}
		s.rec.Emit(record.OrgKey(c.Name), nil)
	case SetMember:
		if c.Org == "" {
			if _, ok := s.members[c.Principal]; ok {
				s.rec.Emit(record.OrgMemberKey(c.Principal), nil)
			}
			break
		}
		if _, ok := s.orgs[c.Org]; !ok {
			out = fmt.Errorf("%w: %s", ErrOrgNotFound, c.Org)
			break
		}
		s.rec.Emit(record.OrgMemberKey(c.Principal), record.OrgMember{Org: c.Org}.Encode())
	case AlterQuotas:
		for _, ch := range c.Changes {
			if ch.Remove {
				if _, ok := s.quotas[ch.Quota]; ok {
					s.rec.Emit(ch.Quota.Key(), nil)
				}
				continue
			}
			s.rec.Emit(ch.Quota.Key(), record.QuotaValue(ch.Value))
		}
	case EnsureMeta:
		if _, ok := s.meta[c.Name]; !ok {
			s.rec.Emit(record.MetaKey(c.Name), record.MetaValue(c.Value))
		}
		out = slices.Clone(s.meta[c.Name])
	case ReserveIDs:
		out = s.reserveIDs(c)
	case CreateTopic:
		out = s.createTopic(c)
	case DeleteTopic:
		t, ok := s.topics[c.Name]
		if !ok {
			out = ErrUnknownTopic
			break
		}
		s.rec.Emit(record.TopicKey(c.Name), nil)
		out = t
	case GrowTopic:
		out = s.growTopic(c)
	case BumpLeaderEpochs:
		s.bumpLeaderEpochs(c.Node)
	case AlterConfigs:
		out = s.alterConfigs(c)
	default:
		out = fmt.Errorf("global: unknown command %T", req.Cmd)
	}
	return machine.Output{
		Records: s.rec.Take(),
		Replies: []machine.Reply{{To: req.ID, Out: out}},
	}
}

func (s *State) hasMembers(org string) bool {
	for _, o := range s.members {
		if o == org {
			return true
		}
	}
	return false
}

func (s *State) hasACL(key []byte) bool {
	_, ok := s.acls[string(key)]
	return ok
}

// MatchACLs returns the bindings f selects, in key order.
func (s *State) MatchACLs(f ACLFilter) []record.ACL {
	var out []record.ACL
	for _, k := range slices.Sorted(maps.Keys(s.acls)) {
		if acl := s.acls[k]; f.Matches(acl) {
			out = append(out, acl)
		}
	}
	return out
}

// Snapshot is a copy of the state for the views, never changed after
// it is made.
type Snapshot struct {
	// Version orders the snapshots a host publishes: a later one has a
	// higher Version. The host numbers them; State.Snapshot leaves it 0.
	Version uint64
	// ACLs are every binding, in key order.
	ACLs        []record.ACL
	Credentials map[record.CredentialKey]record.ScramCredential
	Orgs        map[string]record.Org
	// Members maps a principal ("User:alice") to its organisation.
	Members map[string]string
	Quotas  map[record.Quota]float64
	// Topics are the topic log's topics, by name.
	Topics map[string]record.Topic
	// Meta are the cluster's meta values, by name.
	Meta map[string][]byte
	// Configs are the dynamic configs of the resources other than
	// topics (a topic's are in Topics), never nil or empty.
	Configs map[record.ConfigResource]map[string]string
}

// Snapshot copies the state.
func (s *State) Snapshot() *Snapshot {
	snap := &Snapshot{
		ACLs:        make([]record.ACL, 0, len(s.acls)),
		Credentials: maps.Clone(s.creds),
		Orgs:        maps.Clone(s.orgs),
		Members:     maps.Clone(s.members),
		Quotas:      maps.Clone(s.quotas),
		Topics:      maps.Clone(s.topics),
		Meta:        maps.Clone(s.meta),
		Configs:     maps.Clone(s.configs),
	}
	for _, k := range slices.Sorted(maps.Keys(s.acls)) {
		snap.ACLs = append(snap.ACLs, s.acls[k])
	}
	return snap
}

// DurableState renders the state, in a stable order.
func (s *State) DurableState() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s.acls)) {
		fmt.Fprintf(&b, "acl %+v\n", s.acls[k])
	}
	ck := slices.SortedFunc(maps.Keys(s.creds), func(a, b record.CredentialKey) int {
		return strings.Compare(string(a.Key()), string(b.Key()))
	})
	for _, k := range ck {
		c := s.creds[k]
		fmt.Fprintf(&b, "credential %q/%d iterations=%d salt=%x stored=%x server=%x\n", k.User, k.Mechanism, c.Iterations, c.Salt, c.StoredKey, c.ServerKey)
	}
	for _, name := range slices.Sorted(maps.Keys(s.orgs)) {
		fmt.Fprintf(&b, "org %q created=%d\n", name, s.orgs[name].CreatedMs)
	}
	for _, p := range slices.Sorted(maps.Keys(s.members)) {
		fmt.Fprintf(&b, "member %q org=%q\n", p, s.members[p])
	}
	qk := slices.SortedFunc(maps.Keys(s.quotas), func(a, b record.Quota) int {
		return strings.Compare(string(a.Key()), string(b.Key()))
	})
	for _, q := range qk {
		fmt.Fprintf(&b, "quota %+v = %v\n", q, s.quotas[q])
	}
	for _, name := range slices.Sorted(maps.Keys(s.topics)) {
		t := s.topics[name]
		fmt.Fprintf(&b, "topic %q id=%x leaders=%v epochs=%v configs=%v\n", name, t.ID, t.Leaders, t.Epochs, t.Configs)
	}
	for _, name := range slices.Sorted(maps.Keys(s.meta)) {
		fmt.Fprintf(&b, "meta %q = %x\n", name, s.meta[name])
	}
	ck2 := slices.SortedFunc(maps.Keys(s.configs), func(a, b record.ConfigResource) int {
		return strings.Compare(string(a.Key()), string(b.Key()))
	})
	for _, r := range ck2 {
		fmt.Fprintf(&b, "config %d/%q %v\n", r.Type, r.Name, s.configs[r])
	}
	return b.String()
}

// Check has nothing to check that replay does not: the state is durable
// only.
func (s *State) Check() error { return nil }

// Unit is the global unit as its views use it (coordinator.GlobalUnit): they
// send it commands and are handed a snapshot after every change.
type Unit interface {
	// Do runs a command and returns its reply's Out once its records
	// are durable and the views have them; a refusal is the error.
	Do(ctx context.Context, cmd any) (any, error)
	// Subscribe calls f with the current snapshot now and with each
	// later one.
	Subscribe(f func(*Snapshot))
	// Refresh reads the unit's records again (in cluster mode, what other
	// nodes wrote) and hands the views a new snapshot if they changed.
	Refresh() error
	// Snapshot returns the current snapshot.
	Snapshot() *Snapshot
	// Fresh reads one of the unit's records as the store has it now (a
	// linearizable read in cluster mode): for a lookup that must see
	// another node's change the moment it returned, such as a deleted
	// user's authentication. ok is false when there is none.
	Fresh(key []byte) (value []byte, ok bool, err error)
}
