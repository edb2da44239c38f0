package kafka

// The node-to-node carriage of share-state commands (KIP-932): a share
// partition's leader serves its ShareFetch and ShareAcknowledge, and the
// share coordinator (sharecoord) sends the commands of share-state
// shards another node serves to that node (sharecoord/remote.go). They
// travel in Kafka's own inter-broker key for share state,
// WriteShareGroupState (85), in a tagged field Kafka does not define
// (shareCmdTag), the organisation in tenantTag; the answer comes back in
// the response's shareCmdTag. See 85_write_share_group_state.go.

import "github.com/twmb/franz-go/pkg/kmsg"

// shareCmdTag is the tagged field a forwarded share-state command and its
// answer travel in ("cos").
const shareCmdTag = 0x636f73

// ShareForwardRequest is the request that carries a share-state command
// of tenant (sharecoord.Remote.Send's) to another node.
func ShareForwardRequest(tenant string, cmd []byte) kmsg.Request {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	tagTenant(&req.UnknownTags, tenant)
	req.UnknownTags.Set(shareCmdTag, cmd)
	return req
}

// ShareForwardAnswer is the answer a node gave to ShareForwardRequest;
// false if it gave none (it could not read the command, or does not know
// the tag).
func ShareForwardAnswer(resp kmsg.Response) ([]byte, bool) {
	r, ok := resp.(*kmsg.WriteShareGroupStateResponse)
	if !ok {
		return nil, false
	}
	var answer []byte
	r.UnknownTags.Each(func(k uint32, v []byte) {
		if k == shareCmdTag {
			answer = v
		}
	})
	return answer, answer != nil
}
