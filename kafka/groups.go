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
