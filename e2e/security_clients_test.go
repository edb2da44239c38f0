package e2e

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/xdg-go/scram"
)

// saslRecords is how many records each client produces and consumes.
const saslRecords = 40

// saslSpec is what each client run gets: where and as whom to connect,
// and what to produce and consume.
type saslSpec struct {
	Bootstrap string `json:"bootstrap"`
	Mechanism string `json:"mechanism"`
	User      string `json:"user"`
	Password  string `json:"password"`
	CA        string `json:"ca"`
	Topic     string `json:"topic"`
	Group     string `json:"group"`
	Records   int    `json:"records"`
}

// TestSASLClients: confluent-kafka-go (librdkafka 2.15), kcat (librdkafka
// 2.0), kafka-python, Sarama and kafkajs each produce, consume in a group
// and commit over SASL_SSL, with SCRAM-SHA-512 and with PLAIN; the
// committed offsets (read over the PLAINTEXT listener) cover every record.
func TestSASLClients(t *testing.T) {
	longTest(t)
	// Ten groups form here, one consumer each: the default 3 s initial
	// rebalance delay would be 30 s of waiting for members that never
	// come. The delay is not what this test is about (the groups and
	// tracing tests cover it), so the quiet window closes it early.
	var cfg node.Config
	cfg.Groups.InitialRebalanceDelay = 200 * time.Millisecond
	cfg.Groups.InitialRebalanceQuiet = 50 * time.Millisecond
	n := testkit.StartSecureNode(t, cfg, secureUsers)
	clients := []struct {
		name string
		run  func(t *testing.T, s saslSpec) int // records consumed
	}{
		{"confluent", runConfluentSASL},
		{"kcat", runKcatSASL},
		{"kafka-python", func(t *testing.T, s saslSpec) int {
			pythonKafka(t)
			return scriptConsumed(t, extRun(t, nil, systemPython, "-I", filepath.Join(testkit.ModuleRoot(), "e2e", "testdata", "kafka_python_sasl.py"), writeSpec(t, "spec", s)))
		}},
		{"sarama", runSaramaSASL},
		{"kafkajs", func(t *testing.T, s saslSpec) int {
			return scriptConsumed(t, extRun(t, nil, "node", filepath.Join(jsDir(t), "sasl.mjs"), writeSpec(t, "spec", s)))
		}},
	}
	for _, c := range clients {
		for _, mech := range []string{"SCRAM-SHA-512", "PLAIN"} {
			t.Run(c.name+"/"+mech, func(t *testing.T) {
				name := strings.ToLower(c.name + "-" + mech)
				s := saslSpec{
					Bootstrap: n.Addr("SASL_SSL"), Mechanism: mech, User: "alice", Password: secureUsers["alice"],
					CA: n.CA.File, Topic: name, Group: name + "-group", Records: saslRecords,
				}
				createSASLTopic(t, n, s.Topic)
				if got := c.run(t, s); got < saslRecords {
					t.Errorf("consumed %d records, want %d", got, saslRecords)
				}
				checkCommitted(t, n, s)
			})
		}
	}
}

func createSASLTopic(t *testing.T, n *testkit.SecureNode, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
}

// checkCommitted waits until the group's committed offsets on the topic
// add up to every record produced (a client's last commit may land as it
// closes).
func checkCommitted(t *testing.T, n *testkit.SecureNode, s saslSpec) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var sum int64
	testkit.Eventually(t, 30*time.Second, "the committed offsets cover every record", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		offs, err := adm.FetchOffsets(ctx, s.Group)
		if err != nil {
			return false
		}
		sum = 0
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == s.Topic {
				sum += o.At
			}
		})
		return sum == int64(s.Records)
	})
}

// scriptConsumed reads a script's {"produced", "consumed"} line.
func scriptConsumed(t *testing.T, out []byte) int {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var r struct{ Produced, Consumed int }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("script output %q: %v", out, err)
	}
	return r.Consumed
}

func runConfluentSASL(t *testing.T, s saslSpec) int {
	sec := kafka.ConfigMap{
		"bootstrap.servers":     s.Bootstrap,
		"broker.address.family": "v4",
		"security.protocol":     "SASL_SSL",
		"sasl.mechanisms":       s.Mechanism,
		"sasl.username":         s.User,
		"sasl.password":         s.Password,
		"ssl.ca.location":       s.CA,
	}
	with := func(extra kafka.ConfigMap) *kafka.ConfigMap {
		cfg := kafka.ConfigMap{}
		for k, v := range sec {
			cfg[k] = v
		}
		for k, v := range extra {
			cfg[k] = v
		}
		return &cfg
	}
	p, err := kafka.NewProducer(with(kafka.ConfigMap{"acks": "all"}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	reports := make(chan kafka.Event, s.Records)
	for i := range s.Records {
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &s.Topic, Partition: kafka.PartitionAny}, Value: []byte(strconv.Itoa(i))}, reports); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	for range s.Records {
		select {
		case e := <-reports:
			if m := e.(*kafka.Message); m.TopicPartition.Error != nil {
				t.Fatalf("delivery: %v", m.TopicPartition.Error)
			}
		case <-time.After(extTimeout):
			t.Fatal("no delivery report")
		}
	}
	c, err := kafka.NewConsumer(with(kafka.ConfigMap{"group.id": s.Group, "auto.offset.reset": "earliest", "enable.auto.commit": false}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe(s.Topic, nil); err != nil {
		t.Fatal(err)
	}
	got := 0
	deadline := time.Now().Add(extTimeout)
	for got < s.Records && time.Now().Before(deadline) {
		m, err := c.ReadMessage(time.Second)
		if err != nil {
			if ke, ok := err.(kafka.Error); ok && ke.IsTimeout() {
				continue
			}
			t.Fatalf("consume: %v", err)
		}
		got++
		if _, err := c.CommitMessage(m); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	return got
}

func runKcatSASL(t *testing.T, s saslSpec) int {
	kcat := kcatPath(t)
	sec := []string{"-b", s.Bootstrap, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=" + s.Mechanism,
		"-X", "sasl.username=" + s.User, "-X", "sasl.password=" + s.Password, "-X", "ssl.ca.location=" + s.CA,
		"-X", "broker.address.family=v4"}
	var in strings.Builder
	for i := range s.Records {
		fmt.Fprintf(&in, "kcat-%d\n", i)
	}
	extRun(t, []byte(in.String()), kcat, append(sec, "-P", "-t", s.Topic)...)
	// -G with -c: consume that many in the group, then close, which
	// commits the offsets consumed (enable.auto.commit).
	out := extRun(t, nil, kcat, append(sec, "-X", "auto.offset.reset=earliest", "-c", strconv.Itoa(s.Records), "-G", s.Group, s.Topic)...)
	return strings.Count(string(out), "\n")
}

// saramaSCRAM is Sarama's SCRAM client, as its documentation builds it:
// on xdg-go/scram.
type saramaSCRAM struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (x *saramaSCRAM) Begin(user, pass, authz string) error {
	cl, err := x.hash.NewClient(user, pass, authz)
	if err != nil {
		return err
	}
	x.conv = cl.NewConversation()
	return nil
}
func (x *saramaSCRAM) Step(challenge string) (string, error) { return x.conv.Step(challenge) }
func (x *saramaSCRAM) Done() bool                            { return x.conv.Done() }

type saramaSASLHandler struct {
	want int
	got  chan int
}

func (saramaSASLHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaSASLHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaSASLHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		sess.MarkMessage(m, "")
		// Commit once the partition's backlog is read (every record was
		// produced before the group started, so the high watermark is
		// final): a synchronous commit per record was a round trip and
		// an fsync each, about 11 s of each mechanism's run, and one
		// commit of the last offset is what checkCommitted reads anyway.
		if m.Offset+1 >= claim.HighWaterMarkOffset() {
			sess.Commit()
		}
		h.got <- 1
	}
	return nil
}

func runSaramaSASL(t *testing.T, s saslSpec) int {
	cfg := saramaConfig()
	pem, err := os.ReadFile(s.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	cfg.Net.TLS.Enable = true
	cfg.Net.TLS.Config = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Handshake = true
	cfg.Net.SASL.Version = sarama.SASLHandshakeV1
	cfg.Net.SASL.User, cfg.Net.SASL.Password = s.User, s.Password
	switch s.Mechanism {
	case "PLAIN":
		cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	case "SCRAM-SHA-512":
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: scram.HashGeneratorFcn(sha512.New)} }
	case "SCRAM-SHA-256":
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: scram.HashGeneratorFcn(sha256.New)} }
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	p, err := sarama.NewSyncProducer([]string{s.Bootstrap}, cfg)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	// One SendMessages: one message at a time is a round trip and an
	// fsync each (about 17 s of the suite for both mechanisms).
	msgs := make([]*sarama.ProducerMessage, s.Records)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{Topic: s.Topic, Value: sarama.StringEncoder(strconv.Itoa(i))}
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatalf("produce: %v", err)
	}
	p.Close()
	g, err := sarama.NewConsumerGroup([]string{s.Bootstrap}, s.Group, cfg)
	if err != nil {
		t.Fatalf("consumer group: %v", err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), extTimeout)
	defer cancel()
	h := saramaSASLHandler{want: s.Records, got: make(chan int, s.Records)}
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{s.Topic}, h); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	got := 0
	for got < s.Records {
		select {
		case <-h.got:
			got++
		case <-ctx.Done():
			t.Fatalf("consumed %d of %d", got, s.Records)
		}
	}
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Fatalf("consume: %v", err)
	}
	return got
}
