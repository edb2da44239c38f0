package kafka_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// hostileMetadataBody is a Metadata v12 request after its client id: an
// empty header tag section, no topics, two booleans, then a body tag
// section whose count (2^32 - 1) runs past the frame. kmsg before v1.15.1
// looped over the whole count after the input ran out: a frame of 20
// bytes cost seconds of a core before its decode failed.
var hostileMetadataBody = []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}

// BenchmarkHostileTagCount is the decode of hostileMetadataBody's request
// body: 67.6 s of a core with kmsg v1.15.0, now as cheap as any failed
// decode (BENCHMARKS.md, "Hostile frames").
//
//	go test ./kafka -run '^$' -bench HostileTagCount
func BenchmarkHostileTagCount(b *testing.B) {
	body := hostileMetadataBody[1:] // after the header's tag section
	for b.Loop() {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		if req.ReadFrom(body) == nil {
			b.Fatal("the hostile body decoded")
		}
	}
}
