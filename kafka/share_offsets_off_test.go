package kafka

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareOffsetsOff: on a node without the share coordinator the share
// group offset APIs answer UNSUPPORTED_VERSION, as Kafka's KafkaApis does
// with share groups off (isShareGroupProtocolEnabled): per group for
// DescribeShareGroupOffsets, for the request for the other two.
func TestShareOffsetsOff(t *testing.T) {
	s, hdr := &Server{}, &reqHeader{}
	describe := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	describe.Version = 1
	describe.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "g"}, {GroupID: "h", Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
	d := handleDescribeShareGroupOffsets(context.Background(), s, hdr, describe)().(*kmsg.DescribeShareGroupOffsetsResponse)
	if len(d.Groups) != 2 || d.Groups[0].ErrorCode != kerr.UnsupportedVersion.Code || d.Groups[1].ErrorCode != kerr.UnsupportedVersion.Code || len(d.Groups[1].Topics) != 0 {
		t.Errorf("describe: %+v", d.Groups)
	}
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "g"
	alter.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0}}}}
	if a := handleAlterShareGroupOffsets(context.Background(), s, hdr, alter)().(*kmsg.AlterShareGroupOffsetsResponse); a.ErrorCode != kerr.UnsupportedVersion.Code || len(a.Topics) != 0 {
		t.Errorf("alter: %+v", a)
	}
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "g"
	del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "t"}}
	if r := handleDeleteShareGroupOffsets(context.Background(), s, hdr, del)().(*kmsg.DeleteShareGroupOffsetsResponse); r.ErrorCode != kerr.UnsupportedVersion.Code || len(r.Topics) != 0 {
		t.Errorf("delete: %+v", r)
	}
}
