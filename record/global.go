package record

import "bytes"

// GlobalShard is the global unit's shard: the records every node needs
// and no group shard owns (SCRAM credentials, ACLs, organisations and
// their members, client quotas; kinds 20 to 24). Its machine is
// coordinator/global, run on the same runtime as the group shards, and
// every node's views (the authorizer, the credential lookup, the
// organisations, the quotas) replay its records. It is the last shard
// number, above the assigner's and the transaction coordinator's.
const GlobalShard uint16 = 0xffff

// legacyGlobal are the namespace bytes and kinds of the global records
// as versions before the global unit wrote them: outside every shard,
// each kind under a namespace byte of its own.
var legacyGlobal = []struct {
	namespace byte
	kind      Kind
}{
	{legacyCredentialNamespace, KindScramCredential},
	{legacyACLNamespace, KindACL},
	{legacyOrgNamespace, KindOrg},
	{legacyOrgNamespace, KindOrgMember},
	{legacyQuotaNamespace, KindQuota},
}

// LegacyGlobalPrefixes are the prefixes under which versions before the
// global unit kept its records.
func LegacyGlobalPrefixes() [][]byte {
	out := make([][]byte, len(legacyGlobal))
	for i, l := range legacyGlobal {
		out[i] = []byte{l.namespace, byte(l.kind)}
	}
	return out
}

// UpgradeGlobalKey returns the global unit's key for a key written under
// one of LegacyGlobalPrefixes: the same kind and fields, under
// GlobalShard's prefix. ok is false for any other key.
func UpgradeGlobalKey(old []byte) (key []byte, ok bool) {
	for _, p := range LegacyGlobalPrefixes() {
		if bytes.HasPrefix(old, p) {
			return append(ShardPrefix(GlobalShard), old[1:]...), true
		}
	}
	return nil, false
}
