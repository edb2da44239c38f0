package kafka

// ApiVersions, key 18.
//
// Version notes:
//   - v0: the list of supported keys and version ranges.
//   - v1: ThrottleMillis.
//   - v2: no change.
//   - v3 (KIP-511): flexible; ClientSoftwareName/Version, which Kafka
//     validates (INVALID_REQUEST). Supported and finalized features
//     (KIP-584) as tagged fields: transaction.version, supported 0–2
//     and finalized at Config.TransactionVersion (2 by default, as a
//     Kafka 4 cluster formats it), which is what clients read to opt
//     into KIP-890 part 2; and with share groups on, share.version,
//     supported 0–1 and finalized at 1 (KIP-932), as Kafka 4.2.
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

func handleApiVersions(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if hdr.version >= 3 && (!clientSoftware.MatchString(req.ClientSoftwareName) || !clientSoftware.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return done(resp)
	}
	resp.ApiKeys = apiKeys()
	s.features(resp)
	return done(resp)
}

// transactionVersionFeature is the feature KIP-890 part 2 is finalized
// by (Kafka's TransactionVersion: 1 is part 1's verification, 2 part 2).
const transactionVersionFeature = "transaction.version"

// shareVersionFeature is the feature that switches share groups on
// (KIP-932's share.version; 1 is Kafka 4.1's and 4.2's, 2 adds KIP-1191's
// dead-letter topics, Kafka 4.4's).
const shareVersionFeature = "share.version"

// featuresEpoch is the FinalizedFeaturesEpoch: Kafka's is the metadata
// offset of the last feature change; Cohort's features are fixed for a
// node's lifetime by its configuration, and clients only check that it
// is not -1 (franz-go ignores the features of a response whose epoch is
// -1).
const featuresEpoch = 1

// features fills resp's supported and finalized features, as a Kafka 4
// broker does (the versions carry them as tagged fields from v3; an
// older response drops them when encoded).
func (s *Server) features(resp *kmsg.ApiVersionsResponse) {
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = transactionVersionFeature, 0, 2
	resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	ff := kmsg.NewApiVersionsResponseFinalizedFeature()
	ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = transactionVersionFeature, s.cfg.TransactionVersion, s.cfg.TransactionVersion
	resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	if s.share != nil {
		// KIP-932: share groups, as a Kafka 4.4 broker with them on,
		// dead-letter topics included (KIP-1191's SV_2).
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = shareVersionFeature, 0, 2
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = shareVersionFeature, 2, 2
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	resp.FinalizedFeaturesEpoch = featuresEpoch
}

// tv2 reports whether KIP-890 part 2 is served: a produce of version 12+
// adds its partitions to the transaction, a TxnOffsetCommit of version
// 5+ its group.
func (s *Server) tv2() bool { return s.cfg.TransactionVersion >= 2 }

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
