package kafka

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/cohort-dev/cohort/internal/globaltest"
	"github.com/cohort-dev/cohort/security"
	"github.com/cohort-dev/cohort/store/memstore"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestScope: a tenant's topics are kept under "<tenant>/<name>", the
// default organisation's under their plain names; each scope finds, by
// name and by id, and lists only its own, and no name a client can send
// reaches another's (a '/' is not a topic name).
func TestScope(t *testing.T) {
	for _, tc := range []struct{ tenant, name, internal string }{
		{"", "events", "events"},
		{"acme", "events", "acme/events"},
		{"acme", "__consumer_offsets", "acme/__consumer_offsets"},
	} {
		if got := topics.Internal(tc.tenant, tc.name); got != tc.internal {
			t.Errorf("Internal(%q, %q) = %q, want %q", tc.tenant, tc.name, got, tc.internal)
		}
		if tenant, name := topics.Owner(tc.internal); tenant != tc.tenant || name != tc.name {
			t.Errorf("Owner(%q) = %q, %q, want %q, %q", tc.internal, tenant, name, tc.tenant, tc.name)
		}
	}

	log, err := topics.Open(topics.Config{Dir: filepath.Join(t.TempDir(), "topics"), Store: memstore.New(memstore.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{topics: log}
	made := map[string]*topics.Topic{}
	for _, internal := range []string{"events", "acme/events", "acme/audit", "globex/events"} {
		if made[internal], err = log.Create(internal, 1, nil, false); err != nil {
			t.Fatalf("create %s: %v", internal, err)
		}
	}
	// A name too long for Kafka is refused before the prefix is added,
	// and a prefix never makes an illegal name legal.
	long := make([]byte, 250)
	for i := range long {
		long[i] = 'x'
	}
	for _, bad := range []string{"acme/" + string(long), "acme/a/b", "acme/", "acme/.."} {
		if _, err := log.Create(bad, 1, nil, false); err == nil {
			t.Errorf("the log made a topic %q", bad)
		}
	}

	scopes := map[string]scope{"": {"", s}, "acme": {"acme", s}, "globex": {"globex", s}, "initech": {"initech", s}}
	own := map[string][]string{"": {"events"}, "acme": {"audit", "events"}, "globex": {"events"}, "initech": nil}
	for tenant, sc := range scopes {
		var names []string
		for _, tp := range sc.all() {
			names = append(names, sc.name(tp))
		}
		if !slices.Equal(names, own[tenant]) {
			t.Errorf("%q lists %v, want %v", tenant, names, own[tenant])
		}
		for internal, tp := range made {
			owner, name := topics.Owner(internal)
			mine := owner == tenant
			if got := sc.topicByID(tp.ID); (got != nil) != mine {
				t.Errorf("%q: topicByID(%s) = %v, want found %v", tenant, internal, got, mine)
			}
			if got := sc.topic(name); mine && got != tp {
				t.Errorf("%q: topic(%q) = %v, want %s", tenant, name, got, internal)
			}
			if got := sc.topic(internal); owner != "" && got != nil {
				t.Errorf("%q: the forged name %q found %s", tenant, internal, got.Name)
			}
			if got, ok := sc.out(internal); ok != mine || (mine && got != name) {
				t.Errorf("%q: out(%q) = %q, %v", tenant, internal, got, ok)
			}
		}
		if sc.topic("audit") != nil && tenant != "acme" {
			t.Errorf("%q finds acme's audit", tenant)
		}
	}
}

// TestPeerTenant: the organisation tag of a node-to-node
// AddPartitionsToTxn v4 survives the wire, is absent for the default
// organisation, and is believed only from a default-organisation
// connection allowed CLUSTER_ACTION by an authorizer (the nodes' own):
// not from a connection without it, not from another organisation's,
// and not at all without an authorizer.
func TestPeerTenant(t *testing.T) {
	az, err := security.NewAuthorizer(security.AuthorizerConfig{Global: globaltest.Start(t, nil), SuperUsers: []string{"User:node"}})
	if err != nil {
		t.Fatal(err)
	}
	withAuthz, without := &Server{cfg: Config{Authorizer: az}}, &Server{}
	for _, tenant := range []string{"", "acme"} {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 4
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID = "tx"
		tagTenant(&tx.UnknownTags, tenant)
		if tenant == "" && tx.UnknownTags.Len() != 0 {
			t.Error("the default organisation is tagged")
		}
		req.Transactions = append(req.Transactions, tx)
		got := kmsg.NewPtrAddPartitionsToTxnRequest()
		got.Version = 4
		if err := got.ReadFrom(req.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
		tags := &got.Transactions[0].UnknownTags
		node := &reqHeader{sess: &session{principal: security.User("node")}}
		if p := withAuthz.peerTenant(node, tags); p != tenant {
			t.Errorf("from a node: %q, want %q", p, tenant)
		}
		anon := &reqHeader{sess: &session{principal: security.Anonymous}}
		if p := withAuthz.peerTenant(anon, tags); p != "" {
			t.Errorf("from a default-organisation client without CLUSTER_ACTION: %q, want its own default", p)
		}
		if p := without.peerTenant(node, tags); p != "" {
			t.Errorf("without an authorizer: %q, want the connection's own default", p)
		}
		member := &reqHeader{sess: &session{principal: security.User("bob"), tenant: "globex"}}
		if p := withAuthz.peerTenant(member, tags); p != "globex" {
			t.Errorf("from a globex connection: %q, want its own globex", p)
		}
		// A topic entry's scope (dead letters' Produce and Fetch
		// between nodes) follows the same rules.
		own := withAuthz.scope(node)
		if sc := withAuthz.entryScope(own, node, tags); sc.tenant != tenant {
			t.Errorf("a topic entry from a node: %q, want %q", sc.tenant, tenant)
		}
		if sc := withAuthz.entryScope(withAuthz.scope(anon), anon, tags); sc.tenant != "" {
			t.Errorf("a topic entry from a client without CLUSTER_ACTION: %q, want its own default", sc.tenant)
		}
		if sc := withAuthz.entryScope(own, node, &kmsg.Tags{}); sc != own {
			t.Errorf("an untagged topic entry: %q, want the connection's", sc.tenant)
		}
	}
}
