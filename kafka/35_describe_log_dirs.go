package kafka

// DescribeLogDirs, key 35.
//
// Version notes:
//   - v0: topics and partitions to describe (null: all). v1: no change.
//     v2: flexible. v3: a top-level ErrorCode. v4: each dir's TotalBytes
//     and UsableBytes (KIP-827).
//
// One log dir, the topic log's data directory: each partition this node
// leads with its size on disk (its segments' batches), OffsetLag 0 and
// IsFuture false (one copy, never moved between dirs); a topic or
// partition asked for and not here is left out, as Kafka. With
// authorization on it needs DESCRIBE on the cluster, else (as Kafka) no
// dirs and, from v3, CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"slices"

	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeLogDirs, 0, 4, handleDescribeLogDirs) }

func handleDescribeLogDirs(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !s.authorizeCluster(hdr, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return done(resp)
	}
	sc := s.scope(hdr)
	return func() kmsg.Response {
		dir := kmsg.NewDescribeLogDirsResponseDir()
		dir.Dir = s.topics.Dir()
		dir.TotalBytes, dir.UsableBytes = topics.DiskSpace(dir.Dir)
		add := func(t *topics.Topic, parts []int32) {
			st := kmsg.NewDescribeLogDirsResponseDirTopic()
			st.Topic = sc.name(t)
			for i, p := range t.Partitions {
				if p == nil || parts != nil && !slices.Contains(parts, int32(i)) {
					continue
				}
				sp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
				sp.Partition, sp.Size = int32(i), p.Size()
				st.Partitions = append(st.Partitions, sp)
			}
			if len(st.Partitions) > 0 {
				dir.Topics = append(dir.Topics, st)
			}
		}
		if req.Topics == nil {
			for _, t := range sc.all() {
				add(t, nil)
			}
		} else {
			for _, rt := range req.Topics {
				if t := sc.topic(rt.Topic); t != nil {
					add(t, rt.Partitions)
				}
			}
		}
		resp.Dirs = append(resp.Dirs, dir)
		return resp
	}
}
