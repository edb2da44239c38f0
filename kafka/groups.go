package kafka

import (
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// toGroups hands a group request to the coordinator. The coordinator
// answers once the records it wrote are durable; the connection's writer
// waits for that, so later requests on the connection keep being read
// and started meanwhile.
func (s *Server) toGroups(hdr *reqHeader, req kmsg.Request) func() kmsg.Response {
	return s.groups.Handle(coordinator.Request{Msg: req, ClientID: hdr.clientID, ClientHost: hdr.host})
}

// commitToGroups is toGroups for an OffsetCommit, with the ids of the
// topics it names, which the coordinator stamps on the offsets.
func (s *Server) commitToGroups(hdr *reqHeader, req kmsg.Request, ids map[string][16]byte) func() kmsg.Response {
	return s.groups.Handle(coordinator.Request{Msg: req, ClientID: hdr.clientID, ClientHost: hdr.host, TopicIDs: ids})
}

// groupHandler serves an API entirely in the coordinator.
func groupHandler(s *Server, hdr *reqHeader, req kmsg.Request) func() kmsg.Response {
	return s.toGroups(hdr, req)
}

// partitionFilter is what KafkaApis does before handing OffsetCommit or
// OffsetDelete to the coordinator: partitions of unknown topics, or beyond
// a topic's count, are answered UNKNOWN_TOPIC_OR_PARTITION here and left
// out of what the coordinator sees.
type partitionFilter struct {
	// bad[i][j] is the error of partition j of topic i; 0 if it went to
	// the coordinator.
	bad    [][]int16
	anyBad bool
}

// filterPartitions splits topics (each with a name and partitions, read
// and rebuilt through the accessors) into the known part and the filter.
func filterPartitions[T, P any](s *Server, topics []T, name func(T) string, parts func(T) []P, index func(P) int32, with func(T, []P) T) ([]T, partitionFilter) {
	f := partitionFilter{bad: make([][]int16, len(topics))}
	var known []T
	for i, t := range topics {
		topic := s.topics.Topic(name(t))
		ps := parts(t)
		f.bad[i] = make([]int16, len(ps))
		var keep []P
		for j, p := range ps {
			if _, code := partitionOf(topic, index(p), false); code != 0 {
				f.bad[i][j], f.anyBad = code, true
				continue
			}
			keep = append(keep, p)
		}
		if len(keep) > 0 {
			known = append(known, with(t, keep))
		}
	}
	return known, f
}

// merge walks the request's partitions in order and returns each one's
// error: its own from the filter, or the next of the coordinator's
// answers (codes, the known topics' partition errors in order).
func (f partitionFilter) merge(codes [][]int16) func(i, j int) int16 {
	k, kp := 0, 0
	return func(i, j int) int16 {
		if code := f.bad[i][j]; code != 0 {
			return code
		}
		code := codes[k][kp]
		if kp++; kp == len(codes[k]) {
			k, kp = k+1, 0
		}
		return code
	}
}

// codesOf lists the partition errors of a coordinator's answer, topic by
// topic, for partitionFilter.merge.
func codesOf[T, P any](topics []T, parts func(T) []P, code func(P) int16) [][]int16 {
	out := make([][]int16, len(topics))
	for i, t := range topics {
		for _, p := range parts(t) {
			out[i] = append(out[i], code(p))
		}
	}
	return out
}
