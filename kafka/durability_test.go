package kafka_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/kafka"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAcksAllWaitsForFsync holds the topic log's fsync and checks, with a
// real franz-go producer, that an acks=-1 produce is not acknowledged
// while its batch is appended and readable but not yet synced, and is
// acknowledged once the fsync completes. An acks=1 produce, by contrast,
// is acknowledged while the fsync is held.
func TestAcksAllWaitsForFsync(t *testing.T) {
	dir := t.TempDir()
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	var holding atomic.Bool
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	log, err := topics.Open(topics.Config{Dir: filepath.Join(dir, "topics"), Store: st, SyncFile: func(f *os.File) error {
		if holding.Load() {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
		}
		return f.Sync()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	var releaseOnce sync.Once
	unhold := func() { releaseOnce.Do(func() { close(release) }) }
	defer unhold() // before log.Close, which syncs through the hook
	if _, err := log.Create("held", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	groups, err := coordinator.Start(coordinator.Config{}, coordinator.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := kafka.New(kafka.Config{Topics: log, Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr := ln.Addr().String()
	all, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("held"))
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	// Warm up (metadata, producer id) before holding fsync.
	if err := all.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	holding.Store(true)
	var acked atomic.Bool
	done := make(chan error, 1)
	all.Produce(ctx, &kgo.Record{Value: []byte("held")}, func(_ *kgo.Record, err error) {
		acked.Store(true)
		done <- err
	})
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("acks=-1 produce was acknowledged (err %v) without waiting for fsync", err)
	case <-ctx.Done():
		t.Fatal("the produce never reached fsync")
	}

	// The batch is in the log and readable while its fsync is held...
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("held"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var seen []string
	testkit.Eventually(t, 30*time.Second, "the held batch is readable", func() bool {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen = append(seen, string(r.Value)) })
		return len(seen) == 2
	})
	// ...an acks=1 produce on another client is answered meanwhile...
	one, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("held"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if err := one.ProduceSync(ctx, &kgo.Record{Value: []byte("acks1")}).FirstErr(); err != nil {
		t.Fatalf("acks=1 produce while fsync is held: %v", err)
	}
	// ...but the acks=-1 produce is not.
	if acked.Load() {
		t.Fatal("acks=-1 produce was acknowledged before its fsync completed")
	}

	unhold()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("acks=-1 produce after fsync: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("acks=-1 produce not acknowledged after the fsync completed")
	}
}
