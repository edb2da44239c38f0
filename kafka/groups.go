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

// groupHandler serves an API entirely in the coordinator.
func groupHandler(s *Server, hdr *reqHeader, req kmsg.Request) func() kmsg.Response {
	return s.toGroups(hdr, req)
}
