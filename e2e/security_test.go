package e2e

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/observe/observetest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// secureUsers are the users every security test creates.
var secureUsers = map[string]string{"alice": "alice-secret", "bob": "bob-secret"}

func franzMechanism(t *testing.T, mech, user, pass string) sasl.Mechanism {
	switch mech {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	}
	t.Fatalf("mechanism %s", mech)
	return nil
}

// secureClientOpts are franz-go's options for a listener of n.
func secureClientOpts(t *testing.T, n *testkit.SecureNode, listener, mech, user, pass string, extra ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(n.Addr(listener))}
	if strings.Contains(listener, "SSL") {
		opts = append(opts, kgo.DialTLSConfig(n.CA.ClientTLS()))
	}
	if mech != "" {
		opts = append(opts, kgo.SASL(franzMechanism(t, mech, user, pass)))
	}
	return append(opts, extra...)
}

// produceConsumeCommit produces records with franz-go, consumes them in a
// group, commits, and checks the committed offsets, all through opts.
func produceConsumeCommit(t *testing.T, opts []kgo.Opt, topic, group string, records int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	for i := range records {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	cons, err := kgo.NewClient(append(opts, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())...)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	for got < records {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, records, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got += fs.NumRecords()
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != int64(records) {
		t.Errorf("committed offsets add up to %d, want %d", sum, records)
	}
}

// TestSASLFranzGo: franz-go produces, consumes in a group and commits over
// SASL_SSL with SCRAM-SHA-512 and with PLAIN, and over SASL_PLAINTEXT with
// SCRAM-SHA-256; every request after authentication carries the user's
// principal, and Metadata sends the client back to the listener it came
// on (the SASL port, not the PLAINTEXT one).
func TestSASLFranzGo(t *testing.T) {
	rec := &observetest.Recorder{}
	// Three one-member groups form here: the default 3 s initial
	// rebalance delay, for members that never come, was 9 s of waiting
	// that this test is not about.
	cfg := node.Config{AutoCreateTopics: true, Observer: rec}
	cfg.Groups.InitialRebalanceDelay = 200 * time.Millisecond
	cfg.Groups.InitialRebalanceQuiet = 50 * time.Millisecond
	n := testkit.StartSecureNode(t, cfg, secureUsers)
	for _, tc := range []struct{ listener, mech string }{
		{"SASL_SSL", "SCRAM-SHA-512"},
		{"SASL_SSL", "PLAIN"},
		{"SASL_PLAINTEXT", "SCRAM-SHA-256"},
	} {
		t.Run(tc.listener+"/"+tc.mech, func(t *testing.T) {
			opts := secureClientOpts(t, n, tc.listener, tc.mech, "alice", secureUsers["alice"])
			name := strings.ToLower(tc.listener + "-" + tc.mech)
			produceConsumeCommit(t, opts, name, name+"-group", 50)

			cl, err := kgo.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			_, port, _ := net.SplitHostPort(n.Addr(tc.listener))
			if len(md.Brokers) != 1 || strconv.Itoa(int(md.Brokers[0].Port)) != port {
				t.Errorf("metadata brokers %+v, want the %s listener's port %s", md.Brokers, tc.listener, port)
			}
		})
	}
	snap := rec.Snapshot()
	alice := 0
	for _, r := range snap.Received {
		if r.Principal == "User:alice" {
			alice++
		}
	}
	if alice == 0 {
		t.Errorf("no request carried principal User:alice")
	}
}

// TestSASLWrongPassword: a wrong password, an unknown user and a
// mechanism the listener does not offer all fail the client's
// connection with Kafka's errors.
func TestSASLWrongPassword(t *testing.T) {
	n := testkit.StartSecureNode(t, node.Config{FailedAuthenticationDelay: time.Millisecond}, secureUsers)
	for _, tc := range []struct{ mech, user, pass string }{
		{"SCRAM-SHA-512", "alice", "wrong"},
		{"SCRAM-SHA-256", "mallory", "x"},
		{"PLAIN", "alice", "wrong"},
		{"PLAIN", "mallory", "x"},
	} {
		t.Run(tc.mech+"/"+tc.user, func(t *testing.T) {
			cl, err := kgo.NewClient(secureClientOpts(t, n, "SASL_SSL", tc.mech, tc.user, tc.pass, kgo.RequestRetries(0))...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = cl.Ping(ctx)
			if err == nil || !strings.Contains(err.Error(), kerr.SaslAuthenticationFailed.Message) {
				t.Errorf("ping with a bad login: %v, want %s", err, kerr.SaslAuthenticationFailed.Message)
			}
		})
	}
}

// TestSSLClientCertificatePrincipal: on an SSL listener, a client with a
// certificate the CA signed acts as User:<its subject>, as Kafka's
// default principal mapping; one without acts as User:ANONYMOUS; with
// --tls-client-auth=require a client without one cannot connect.
func TestSSLClientCertificatePrincipal(t *testing.T) {
	rec := &observetest.Recorder{}
	n := testkit.StartSecureNode(t, node.Config{AutoCreateTopics: true, Observer: rec}, nil)
	client := n.CA.Client(t, "client", pkix.Name{CommonName: "client-1", OrganizationalUnit: []string{"eng"}, Organization: []string{"Acme"}})
	ping := func(cfg *kgo.Opt) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr("SSL")), *cfg, kgo.RequestRetries(0))
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err = kadm.NewClient(cl).ListTopics(ctx)
		return err
	}
	withCert := kgo.DialTLSConfig(n.CA.ClientTLS(client))
	withoutCert := kgo.DialTLSConfig(n.CA.ClientTLS())
	if err := ping(&withCert); err != nil {
		t.Fatalf("with a certificate: %v", err)
	}
	if err := ping(&withoutCert); err != nil {
		t.Fatalf("without a certificate (requested, not required): %v", err)
	}
	seen := map[string]bool{}
	for _, r := range rec.Snapshot().Received {
		seen[r.Principal] = true
	}
	if want := "User:CN=client-1,OU=eng,O=Acme"; !seen[want] || !seen["User:ANONYMOUS"] {
		t.Errorf("principals seen %v, want %s and User:ANONYMOUS", seen, want)
	}

	req := testkit.StartSecureNode(t, node.Config{TLSClientAuth: "require"}, nil)
	n = req
	if err := ping(&withoutCert); err == nil {
		t.Errorf("a client without a certificate connected to a listener that requires one")
	}
	withCert = kgo.DialTLSConfig(req.CA.ClientTLS(req.CA.Client(t, "client", pkix.Name{CommonName: "c"})))
	if err := ping(&withCert); err != nil {
		t.Errorf("with a certificate, required: %v", err)
	}
}

// TestAdvertisedPerListener: each listener advertises its own address in
// Metadata, FindCoordinator and DescribeCluster, by listener name
// (--advertised-kafka-addr NAME://host:port); a listener without one
// advertises its bound address.
func TestAdvertisedPerListener(t *testing.T) {
	n := testkit.StartSecureNode(t, node.Config{AdvertisedKafkaAddr: "SASL_SSL://sasl.example:19093,SSL://ssl.example:19094"}, secureUsers)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ listener, mech, want string }{
		{"PLAINTEXT", "", n.Addr("PLAINTEXT")},
		{"SASL_PLAINTEXT", "PLAIN", n.Addr("SASL_PLAINTEXT")},
		{"SASL_SSL", "SCRAM-SHA-512", "sasl.example:19093"},
		{"SSL", "", "ssl.example:19094"},
	} {
		cl, err := kgo.NewClient(secureClientOpts(t, n, tc.listener, tc.mech, "bob", secureUsers["bob"])...)
		if err != nil {
			t.Fatal(err)
		}
		md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("%s: metadata: %v", tc.listener, err)
		}
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey = "g"
		fcr, err := fc.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("%s: find coordinator: %v", tc.listener, err)
		}
		dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("%s: describe cluster: %v", tc.listener, err)
		}
		cl.Close()
		got := []string{
			net.JoinHostPort(md.Brokers[0].Host, fmt.Sprint(md.Brokers[0].Port)),
			net.JoinHostPort(fcr.Host, fmt.Sprint(fcr.Port)),
			net.JoinHostPort(dc.Brokers[0].Host, fmt.Sprint(dc.Brokers[0].Port)),
		}
		for i, g := range got {
			if g != tc.want {
				t.Errorf("%s: answer %d (metadata, find coordinator, describe cluster) advertises %s, want %s", tc.listener, i, g, tc.want)
			}
		}
	}
}

// TestScramCredentialAPIs: kadm's AlterUserSCRAMs and DescribeUserSCRAMs
// with Kafka's rules; a changed password takes effect at the next login
// (SCRAM and PLAIN alike) and a deleted user can no longer log in.
func TestScramCredentialAPIs(t *testing.T) {
	n := testkit.StartSecureNode(t, node.Config{FailedAuthenticationDelay: time.Millisecond}, secureUsers)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	d, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 2 || len(d["alice"].CredInfos) != 2 || d["alice"].CredInfos[0].Mechanism != kadm.ScramSha256 || d["alice"].CredInfos[1].Iterations != 4096 {
		t.Errorf("described %+v, want alice and bob with two mechanisms at 4096 iterations", d)
	}
	d, err = adm.DescribeUserSCRAMs(ctx, "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if !errorsIs(d["nobody"].Err, kerr.ResourceNotFound) {
		t.Errorf("describe nobody: %v, want RESOURCE_NOT_FOUND", d["nobody"].Err)
	}

	res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "nobody", Mechanism: kadm.ScramSha256}, {User: "carol", Mechanism: kadm.ScramSha512}},
		[]kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "p"}, {User: "dave", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if !errorsIs(res["nobody"].Err, kerr.ResourceNotFound) || !errorsIs(res["carol"].Err, kerr.DuplicateResource) || res["dave"].Err != nil {
		t.Errorf("alter: nobody %v (want RESOURCE_NOT_FOUND), carol %v (want DUPLICATE_RESOURCE), dave %v (want none)", res["nobody"].Err, res["carol"].Err, res["dave"].Err)
	}
	// kadm checks iterations itself; the broker checks them too.
	raw := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	raw.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "erin", Mechanism: 2, Iterations: 100, Salt: []byte("s"), SaltedPassword: []byte("p")}}
	rr, err := raw.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Results) != 1 || rr.Results[0].ErrorCode != kerr.UnacceptableCredential.Code {
		t.Errorf("100 iterations: %+v, want UNACCEPTABLE_CREDENTIAL", rr.Results)
	}

	login := func(mech, pass string) error {
		c, err := kgo.NewClient(secureClientOpts(t, n, "SASL_SSL", mech, "alice", pass, kgo.RequestRetries(0))...)
		if err != nil {
			return err
		}
		defer c.Close()
		return c.Ping(ctx)
	}
	n.AddUsers(t, map[string]string{"alice": "new-secret"})
	for _, mech := range []string{"SCRAM-SHA-512", "PLAIN"} {
		if err := login(mech, secureUsers["alice"]); err == nil {
			t.Errorf("%s: the old password still works", mech)
		}
		if err := login(mech, "new-secret"); err != nil {
			t.Errorf("%s: the new password: %v", mech, err)
		}
	}
	res, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}, {User: "alice", Mechanism: kadm.ScramSha512}}, nil)
	if err != nil || res["alice"].Err != nil {
		t.Fatalf("delete alice: %v %v", err, res["alice"].Err)
	}
	for _, mech := range []string{"SCRAM-SHA-512", "PLAIN"} {
		if err := login(mech, "new-secret"); err == nil {
			t.Errorf("%s: a deleted user logged in", mech)
		}
	}
}

func errorsIs(err error, target *kerr.Error) bool {
	ke, ok := err.(*kerr.Error)
	return ok && ke.Code == target.Code
}

// TestClusterAdvertisesPerListener: in cluster mode every node registers
// the advertised address of each of its listeners, and any node answers a
// client with the addresses of the listener the client came on, for
// every node: a client of the INTERNAL listener is never sent to a
// PLAINTEXT one.
func TestClusterAdvertisesPerListener(t *testing.T) {
	c := startCluster(t, 1, 2, "--kafka-listen", "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0", "--listener-security-protocol-map", "INTERNAL:PLAINTEXT")
	internal := regexp.MustCompile(`msg="cohort listening" kafka=(\S+) listener=INTERNAL`)
	want := map[string]map[int32]string{"PLAINTEXT": {}, "INTERNAL": {}}
	for _, id := range c.live() {
		p := c.node(id)
		m := internal.FindStringSubmatch(p.Log())
		if m == nil {
			t.Fatalf("node %d logged no INTERNAL listener:\n%s", id, p.Log())
		}
		want["PLAINTEXT"][id], want["INTERNAL"][id] = p.Addr, m[1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for listener, addrs := range want {
		for id, seed := range addrs {
			cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
			if err != nil {
				t.Fatal(err)
			}
			md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			cl.Close()
			if err != nil {
				t.Fatalf("metadata from node %d's %s listener: %v", id, listener, err)
			}
			got := map[int32]string{}
			for _, b := range md.Brokers {
				got[b.NodeID] = net.JoinHostPort(b.Host, fmt.Sprint(b.Port))
			}
			if fmt.Sprint(got) != fmt.Sprint(addrs) {
				t.Errorf("metadata from node %d's %s listener: brokers %v, want %v", id, listener, got, addrs)
			}
		}
	}
}
