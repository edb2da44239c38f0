package offsetstopic

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// codec is a record key or value type.
type codec interface {
	ReadFrom([]byte) error
	AppendTo([]byte) []byte
}

// valueTypes are the KIP-848 value types, by name.
var valueTypes = map[string]func() codec{
	"ConsumerGroupMetadataValue":                 func() codec { return new(ConsumerGroupMetadataValue) },
	"ConsumerGroupMemberMetadataValue":           func() codec { return new(ConsumerGroupMemberMetadataValue) },
	"ConsumerGroupTargetAssignmentMetadataValue": func() codec { return new(ConsumerGroupTargetAssignmentMetadataValue) },
	"ConsumerGroupTargetAssignmentMemberValue":   func() codec { return new(ConsumerGroupTargetAssignmentMemberValue) },
	"ConsumerGroupCurrentMemberAssignmentValue":  func() codec { return new(ConsumerGroupCurrentMemberAssignmentValue) },
}

// FuzzReadRecord: no input panics the decoders (a reader of the topic
// meets whatever a broker wrote), and whatever decodes re-encodes to
// bytes that decode to the same thing. The seed corpus
// (testdata/fuzz/FuzzReadRecord) holds a key and a value of every type
// the topic writes.
func FuzzReadRecord(f *testing.F) {
	regex := "t.*"
	f.Add((&ConsumerGroupMemberMetadataKey{Group: "g", Member: "m"}).AppendTo(nil))
	f.Add((&ConsumerGroupMemberMetadataValue{ClientID: "c", SubscribedTopicRegex: &regex, ClassicMemberMetadata: &ClassicMemberMetadata{SupportedProtocols: []ClassicProtocol{{Name: "range"}}}}).AppendTo(nil))
	f.Add((&ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: 1, AssignedPartitions: []TopicPartitions{{Partitions: []int32{0, 1}}}}).AppendTo(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		if k, err := ReadKey(b); err == nil {
			again, err := ReadKey(k.(codec).AppendTo(nil))
			if err != nil || !reflect.DeepEqual(again, k) {
				t.Fatalf("key %x: %#v re-reads as %#v, %v", b, k, again, err)
			}
		}
		for name, mk := range valueTypes {
			v := mk()
			if v.ReadFrom(b) != nil {
				continue
			}
			again := mk()
			if err := again.ReadFrom(v.AppendTo(nil)); err != nil || !reflect.DeepEqual(again, v) {
				t.Fatalf("%s %x: %#v re-reads as %#v, %v", name, b, v, again, err)
			}
		}
		// kmsg's own decoders, as a reader of the topic runs them.
		var ov kmsg.OffsetCommitValue
		_ = ov.ReadFrom(b)
		var gv kmsg.GroupMetadataValue
		_ = gv.ReadFrom(b)
	})
}
