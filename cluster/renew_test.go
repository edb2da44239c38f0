package cluster

import (
	"testing"
	"time"
)

// outageTolerance is the longest etcd outage (a leader election, a member
// gone) a node rides out without being suspended, whatever the phase of
// its renewals when the outage begins: the last renewal succeeded just
// before it began, the next was due a cadence later, and the node is
// suspended at the last renewal plus TTL − suspicion.
func outageTolerance(ttl time.Duration) time.Duration {
	every, _, _ := keepAliveTimes(ttl)
	return ttl - suspicion(ttl) - every
}

// TestRenewalCadenceRidesOutElections: whatever the phase of its renewals,
// a node rides out an etcd outage of 5/8 of its lease TTL. Renewing every
// third of the TTL left 5/12 (4.2 s of a 10 s lease), less than an etcd
// election took under the full suite's load (the likely cause of
// TestClusterEtcdMemberKilled's rare suspensions). The
// retry after a failure comes soon, and an attempt never outlasts the
// cadence it replaces.
func TestRenewalCadenceRidesOutElections(t *testing.T) {
	for _, ttl := range []time.Duration{2 * time.Second, 3 * time.Second, 6 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute} {
		every, retry, attempt := keepAliveTimes(ttl)
		if got, want := outageTolerance(ttl), ttl*5/8; got < want {
			t.Errorf("TTL %v: a node rides out an etcd outage of %v from its start (renewing every %v, suspended %v before expiry); want at least %v", ttl, got, every, suspicion(ttl), want)
		}
		if retry > every || retry > 200*time.Millisecond {
			t.Errorf("TTL %v: retry after a failed renewal %v; want at most %v and 200ms", ttl, retry, every)
		}
		if attempt > ttl/3 || attempt > time.Second {
			t.Errorf("TTL %v: a renewal attempt may take %v; want at most a third of the TTL and 1s", ttl, attempt)
		}
	}
}
