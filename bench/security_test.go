package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The cost of TLS and SASL: the same franz-go workloads over a node's
// PLAINTEXT listener and over its SASL_SSL listener (TLS 1.3 with Go's
// crypto/tls on both ends, SCRAM-SHA-512 once per connection), in the
// same process.
//
//	go test ./bench -run '^$' -bench 'Security' -benchtime 5s -count 3

var securityListeners = []struct{ name, listener string }{
	{"PLAINTEXT", "PLAINTEXT"},
	{"SASL_PLAINTEXT", "SASL_PLAINTEXT"},
	{"SSL", "SSL"},
	{"SASL_SSL", "SASL_SSL"},
}

// securityOpts are the client options of a listener of n.
func securityOpts(n *testkit.SecureNode, listener string) []kgo.Opt {
	var opts []kgo.Opt
	if listener == "SSL" || listener == "SASL_SSL" {
		opts = append(opts, kgo.DialTLSConfig(n.CA.ClientTLS()))
	}
	if listener == "SASL_PLAINTEXT" || listener == "SASL_SSL" {
		opts = append(opts, kgo.SASL(scram.Auth{User: "bench", Pass: "bench-pw"}.AsSha512Mechanism()))
	}
	return opts
}

func securityNode(b *testing.B) *testkit.SecureNode {
	return testkit.StartSecureNode(b, node.Config{}, map[string]string{"bench": "bench-pw"})
}

// BenchmarkSecurityProduce: producing 1 KiB records with acks=-1 (see
// BenchmarkProduce for the producer settings), MB/s of record payload.
func BenchmarkSecurityProduce(b *testing.B) {
	for _, l := range securityListeners {
		b.Run(l.name, func(b *testing.B) { benchSecureProduce(b, securityNode(b), l.listener) })
	}
}

// benchSecureProduce is BenchmarkSecurityProduce on n's listener.
func benchSecureProduce(b *testing.B, n *testkit.SecureNode, listener string) {
	ctx := benchContext(b)
	createTopic(ctx, b, n.Addr("PLAINTEXT"))
	cl := newClient(b, append(producerOpts(n.Addr(listener), true), securityOpts(n, listener)...))
	produce(ctx, b, cl, numPartitions) // metadata, connection, producer id
	b.SetBytes(recordBytes)
	b.ResetTimer()
	cpu := startCPU()
	produce(ctx, b, cl, b.N)
	b.StopTimer()
	b.ReportMetric(cpu.perOp(b.N), "cpu-us/record")
}

// BenchmarkSecurityCommit: 64 franz-go clients, each in a group of its
// own with its own connection, commit one offset at a time with
// OffsetCommit (kadm's CommitOffsets) as fast as answers come; one op is
// one commit.
func BenchmarkSecurityCommit(b *testing.B) {
	for _, l := range securityListeners {
		b.Run(l.name, func(b *testing.B) { benchSecureCommit(b, securityNode(b), l.listener) })
	}
}

// benchSecureCommit is BenchmarkSecurityCommit on n's listener.
func benchSecureCommit(b *testing.B, n *testkit.SecureNode, listener string) {
	const committers = 64
	ctx := benchContext(b)
	createTopic(ctx, b, n.Addr("PLAINTEXT"))
	adms := make([]*kadm.Client, committers)
	for i := range adms {
		adms[i] = kadm.NewClient(newClient(b, append([]kgo.Opt{kgo.SeedBrokers(n.Addr(listener))}, securityOpts(n, listener)...)))
	}
	commit := func(ctx context.Context, i int, at int64) error {
		var o kadm.Offsets
		o.Add(kadm.Offset{Topic: topicName, Partition: int32(i % numPartitions), At: at})
		r, err := adms[i].CommitOffsets(ctx, fmt.Sprintf("sec-commit-%d", i), o)
		if err == nil {
			err = r.Error()
		}
		return err
	}
	for i := range adms { // coordinator lookups and connections
		if err := commit(ctx, i, 0); err != nil {
			b.Fatal(err)
		}
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	errs := make(chan error, committers)
	b.ResetTimer()
	cpu := startCPU()
	for i := range adms {
		wg.Go(func() {
			for at := int64(1); left.Add(-1) >= 0; at++ {
				if err := commit(ctx, i, at); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	b.ReportMetric(cpu.perOp(b.N), "cpu-us/commit")
}
