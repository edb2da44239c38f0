package loadgen

import (
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Member is a classic-protocol member that has joined, as its heartbeats
// name it.
type Member struct {
	Group string
	ID    string
	Gen   int32
}

// JoinGroups forms len(addrs) groups of perGroup members each, group g
// at its coordinator addrs[g], up to parallel groups at a time, each with
// its own connections (one per member, closed once the group is formed:
// that does not end a member, whose session runs on). p is every group's
// parameters but its name, which is name(g). It returns every member.
func JoinGroups(addrs []string, clientID string, p RebalanceParams, perGroup, parallel int, name func(g int) string) ([]Member, error) {
	groups := len(addrs)
	var (
		mu      sync.Mutex
		members = make([]Member, 0, groups*perGroup)
	)
	err := Parallel(groups, parallel, func(g int) error {
		conns, err := DialN(addrs[g], perGroup, clientID)
		if err != nil {
			return err
		}
		defer CloseAll(conns)
		gp := p
		gp.Group = name(g)
		r := NewRebalance(gp, conns)
		if _, err := r.Run(); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, id := range r.MemberIDs() {
			members = append(members, Member{Group: gp.Group, ID: id, Gen: r.FinalGen()})
		}
		return nil
	})
	return members, err
}

// Heartbeats sends one Heartbeat v4 for each member on c, with up to
// depth in flight, and checks every answer is NONE. If lat is not nil it
// is given each heartbeat's time from send to answer.
func Heartbeats(c *Conn, members []Member, depth int, lat func(time.Duration)) error {
	return Pipelined(c, members, depth,
		func(m Member) kmsg.Request {
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.SetVersion(HeartbeatVersion)
			hb.Group, hb.MemberID, hb.Generation = m.Group, m.ID, m.Gen
			return hb
		},
		func(m Member, r kmsg.Response, took time.Duration) error {
			if code := r.(*kmsg.HeartbeatResponse).ErrorCode; code != 0 {
				return fmt.Errorf("heartbeat of %s in %s (generation %d): %w", m.ID, m.Group, m.Gen, kerr.ErrorForCode(code))
			}
			if lat != nil {
				lat(took)
			}
			return nil
		})
}
