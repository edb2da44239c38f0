package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// SecureNode is a node with a Kafka listener of every security protocol
// (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, each on a free 127.0.0.1
// port), a server certificate from its own CA, client certificates
// verified if given, and SCRAM users.
type SecureNode struct {
	*node.Node
	CA     *CA
	Server Pair
}

// SecureListeners is the KafkaListen of a SecureNode.
const SecureListeners = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"

// StartSecureNode starts a SecureNode from cfg (its listeners and TLS
// files are set here) and creates users (name → password, SCRAM-SHA-256
// and SCRAM-SHA-512) with AlterUserScramCredentials over the PLAINTEXT
// listener, as an operator bootstraps the first user.
func StartSecureNode(t testing.TB, cfg node.Config, users map[string]string) *SecureNode {
	t.Helper()
	ca := NewCA(t)
	srv := ca.Server(t, "server")
	cfg.KafkaListen = SecureListeners
	cfg.TLSCert, cfg.TLSKey, cfg.TLSClientCA = srv.CertFile, srv.KeyFile, ca.File
	if cfg.TLSClientAuth == "" {
		cfg.TLSClientAuth = "request"
	}
	n := StartNode(t, cfg)
	sn := &SecureNode{Node: n, CA: ca, Server: srv}
	if len(users) > 0 {
		sn.AddUsers(t, users)
	}
	return sn
}

// Addr is the bound address of the named listener.
func (n *SecureNode) Addr(listener string) string { return n.KafkaAddrs()[listener] }

// AddUsers creates or changes SCRAM users over the PLAINTEXT listener.
func (n *SecureNode) AddUsers(t testing.TB, users map[string]string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var up []kadm.UpsertSCRAM
	for u, p := range users {
		for _, m := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
			up = append(up, kadm.UpsertSCRAM{User: u, Mechanism: m, Iterations: 4096, Password: p})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, up)
	if err != nil {
		t.Fatalf("create users: %v", err)
	}
	for u, r := range res {
		if r.Err != nil {
			t.Fatalf("create user %s: %v %s", u, r.Err, r.ErrMessage)
		}
	}
}
