package record

import (
	"bytes"
	"fmt"
)

// GlobalShard is the global unit's shard: the records every node needs
// and no group shard owns (SCRAM credentials, ACLs, organisations and
// their members, client quotas, the topic catalog and the cluster's meta;
// kinds 20 to 26). Its machine is
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
	out := make([][]byte, 0, len(legacyGlobal)+2)
	for _, l := range legacyGlobal {
		out = append(out, []byte{l.namespace, byte(l.kind)})
	}
	return append(out, legacyTopicPrefix, legacyMetaPrefix)
}

// UpgradeGlobal returns the global unit's record for a record written
// under one of LegacyGlobalPrefixes: for credentials, ACLs, organisations
// and quotas the same kind, fields and value under GlobalShard's prefix;
// a JSON topic becomes a KindTopic record, a meta value a KindMeta one.
// It fails for any other key, or a value that does not decode.
func UpgradeGlobal(key, value []byte) (nk, nv []byte, err error) {
	switch {
	case bytes.HasPrefix(key, legacyTopicPrefix):
		return upgradeLegacyTopic(key, value)
	case bytes.HasPrefix(key, legacyMetaPrefix):
		return MetaKey(string(key[len(legacyMetaPrefix):])), MetaValue(value), nil
	}
	for _, l := range legacyGlobal {
		if len(key) >= 2 && key[0] == l.namespace && key[1] == byte(l.kind) {
			return append(ShardPrefix(GlobalShard), key[1:]...), value, nil
		}
	}
	return nil, nil, fmt.Errorf("%w: key %q is not a record of a version before the global unit", ErrCorrupt, key)
}
