package kafka

// ApiVersions, key 18.
//
// Version notes:
//   - v0: the list of supported keys and version ranges.
//   - v1: ThrottleMillis.
//   - v2: no change.
//   - v3 (KIP-511): flexible; ClientSoftwareName/Version, which Kafka
//     validates (INVALID_REQUEST). Supported and finalized features
//     (KIP-584) as tagged fields; Cohort has none to finalize.
//   - v4: no change (KIP-896 pairs it with the removal of old versions).
//   - v5+: unknown to Kafka 4; a client opening with a newer version than
//     we serve (franz-go sends v5) gets UNSUPPORTED_VERSION in v0 format
//     with the supported ranges, and retries.
//
// The response header is always v0, even for flexible versions.

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ApiVersions, 0, 4, handleApiVersions) }

// clientSoftware is Kafka's pattern for client software names and
// versions (KIP-511).
var clientSoftware = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func handleApiVersions(_ context.Context, _ *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if hdr.version >= 3 && (!clientSoftware.MatchString(req.ClientSoftwareName) || !clientSoftware.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return done(resp)
	}
	resp.ApiKeys = apiKeys()
	return done(resp)
}

func apiKeys() []kmsg.ApiVersionsResponseApiKey {
	var keys []kmsg.ApiVersionsResponseApiKey
	for _, k := range supportedKeys() {
		h := handlers[k]
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: h.min, MaxVersion: h.max})
	}
	return keys
}

// unsupportedApiVersions is the answer to an ApiVersions request of a
// version we do not serve: UNSUPPORTED_VERSION with the supported ranges,
// to be encoded at v0 (pending.respVersion), which every client can read.
func unsupportedApiVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = apiKeys()
	return resp
}
