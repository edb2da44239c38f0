package kafka

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quiet observes every request and does nothing with it: the cost of the
// observed path itself (two clock reads, two calls), which observe.Nop
// skips.
type quiet struct{ observe.Nop }

// BenchmarkRequestPath is one small request (DescribeCluster) through what
// a connection does to it besides the socket: decode, the handler, the
// hand-over to the writer, the response's encoding, and the observer's
// calls. "nop" is the default observer; "observed" one that is not Nop.
//
//	go test ./kafka -run '^$' -bench RequestPath -count 5
func BenchmarkRequestPath(b *testing.B) {
	for _, bc := range []struct {
		name string
		obs  observe.Observer
	}{{"nop", nil}, {"observed", quiet{}}} {
		b.Run(bc.name, func(b *testing.B) { benchRequestPath(b, bc.obs) })
	}
}

func benchRequestPath(b *testing.B, obs observe.Observer) {
	dir := b.TempDir()
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	log, err := topics.Open(topics.Config{Dir: filepath.Join(dir, "topics"), Store: st})
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	groups, err := coordinator.Start(coordinator.Config{Shards: 1}, coordinator.Options{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	defer groups.Close()
	s, err := New(Config{Topics: log, Groups: groups, AdvertisedAddr: "127.0.0.1:9092", Observer: obs})
	if err != nil {
		b.Fatal(err)
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.SetVersion(0)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)[4:]
	c := &conn{s: s}
	ctx := context.Background()
	q := make(chan *pending, 1)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		p, err := s.decode(ctx, frame, "/127.0.0.1", time.Now(), nil)
		if err != nil {
			b.Fatal(err)
		}
		q <- &p // as conn.enqueue
		buf = c.appendResponse(buf[:0], <-q)
	}
}
