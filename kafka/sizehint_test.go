package kafka

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListGroupsSizeHint: the room made for a ListGroups answer is at
// least what it encodes to, at every version, so that a million groups'
// answer is written into one buffer, never grown and copied.
func TestListGroupsSizeHint(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		r := kmsg.NewPtrListGroupsResponse()
		for i := range rng.IntN(300) {
			r.Groups = append(r.Groups, kmsg.ListGroupsResponseGroup{
				Group:        fmt.Sprintf("g-%d-%s", i, string(make([]byte, rng.IntN(200)))),
				ProtocolType: []string{"", "consumer", "connect"}[rng.IntN(3)],
				GroupState:   []string{"Empty", "Stable", "PreparingRebalance"}[rng.IntN(3)],
				GroupType:    []string{"classic", "consumer", "share"}[rng.IntN(3)],
			})
		}
		for v := int16(0); v <= r.MaxVersion(); v++ {
			r.SetVersion(v)
			if n, hint := len(r.AppendTo(nil)), listGroupsSizeHint(r); n > hint {
				t.Fatalf("trial %d, v%d, %d groups: encoded %d bytes, hint %d", trial, v, len(r.Groups), n, hint)
			}
		}
	}
}
