package handoff_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/handoff"
)

// FuzzHandoff drives the machine with command sequences decoded from
// fuzzed bytes (3 bytes per step: an operation, a consumer, an argument):
//
//	go test ./coordinator/handoff -run '^$' -fuzz '^FuzzHandoff$' -fuzztime 60s
//
// The properties: nothing panics, a refused call is an *handoff.Error,
// every record replays, and after every step a machine rebuilt from the
// records holds the same owners, handoffs, topics and consumers as the
// live one.
func FuzzHandoff(f *testing.F) {
	f.Add([]byte{0, 0, 4, 0, 1, 4, 6, 0, 12, 0, 2, 4, 6, 0, 12, 2, 2, 0, 3, 0, 0, 6, 0, 40})
	f.Add([]byte{0, 0, 8, 6, 0, 12, 0, 1, 8, 6, 0, 12, 1, 1, 0, 6, 0, 200, 7, 0, 0, 0, 1, 8, 6, 0, 12, 2, 1, 1, 3, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newHarness(t, 1)
		names := []string{"a", "b", "c", "d"}
		stream := handoff.StreamID(0)
		for len(data) >= 3 {
			op, who, arg := data[0]%8, names[int(data[1])%len(names)], data[2]
			data = data[3:]
			tp := handoff.TP{Topic: topic, Partition: int32(arg % 16)}
			var out handoff.Output
			var err error
			switch op {
			case 0:
				stream++
				out, err = h.m.Register(h.now, grp, who, topic, int32(arg%16), stream)
			case 1:
				out = h.m.Disconnect(h.now, grp, who, stream-handoff.StreamID(arg%3))
			case 2:
				out, err = h.m.Ready(h.now, grp, who, tp)
			case 3:
				out, err = h.m.Released(h.now, grp, who, tp)
			case 4:
				out = h.m.Partitions(h.now, grp, topic, int32(arg%32))
			case 5:
				stream++
				out, err = h.m.Register(h.now, grp, who, "other", int32(1+arg%4), stream)
			case 6:
				h.advance(time.Duration(arg) * 250 * time.Millisecond)
			case 7:
				h.restart()
			}
			if err != nil {
				if _, ok := err.(*handoff.Error); !ok {
					t.Fatalf("refusal of type %T: %v", err, err)
				}
			}
			h.applyUnchecked(out)
			replayed := h.replayed()
			live, again := h.m.View(grp), replayed.View(grp)
			for i := range live.Consumers {
				live.Consumers[i].Connected = false
			}
			if fmt.Sprint(live) != fmt.Sprint(again) {
				t.Fatalf("replayed state differs:\nlive %+v\nreplayed %+v", live, again)
			}
		}
	})
}
