package loadgen

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The KIP-848 versions the load generator speaks: those Apache Kafka 4.0
// and franz-go's kfake serve.
const (
	ConsumerHeartbeatVersion = 1
	ConsumerDescribeVersion  = 1
)

// ConsumerMember is a consumer-protocol (KIP-848) member: its group, id,
// current epoch and the partitions it owns.
type ConsumerMember struct {
	Group string
	ID    string
	Epoch int32
	// Interval is the heartbeat interval the coordinator last asked for.
	Interval time.Duration

	topic   string
	topicID [16]byte
	owned   []int32 // sorted
	report  bool    // owned changed since the coordinator last heard it
}

// NewConsumerMember is a member of group, subscribed to topic, not yet
// joined (epoch 0).
func NewConsumerMember(group, id, topic string) *ConsumerMember {
	return &ConsumerMember{Group: group, ID: id, topic: topic}
}

// Beat sends one ConsumerGroupHeartbeat on c, as a client does: the
// subscription while joining, the partitions it owns after they changed,
// else only the id and epoch; and takes the answer's epoch and
// assignment. It reports whether the member's partitions changed.
func (m *ConsumerMember) Beat(c *Conn) (bool, error) {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = m.Group, m.ID, m.Epoch, -1
	if m.Epoch == 0 {
		req.RebalanceTimeoutMillis = 60000
		req.SubscribedTopicNames = []string{m.topic}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	} else if m.report {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if len(m.owned) > 0 {
			req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: m.topicID, Partitions: m.owned})
		}
	}
	resp, err := Do[*kmsg.ConsumerGroupHeartbeatResponse](c, ConsumerHeartbeatVersion, req)
	if err != nil {
		return false, err
	}
	if resp.ErrorCode != 0 {
		return false, fmt.Errorf("ConsumerGroupHeartbeat of %s at epoch %d: %w", m.ID, m.Epoch, kerr.ErrorForCode(resp.ErrorCode))
	}
	m.Epoch = resp.MemberEpoch
	m.Interval = time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond
	if req.Topics != nil {
		m.report = false
	}
	if resp.Assignment == nil {
		return false, nil
	}
	var next []int32
	for _, t := range resp.Assignment.Topics {
		m.topicID = t.TopicID
		next = append(next, t.Partitions...)
	}
	slices.Sort(next)
	if slices.Equal(next, m.owned) {
		return false, nil
	}
	m.owned, m.report = next, true
	return true, nil
}

// Owned is the partitions the member owns, sorted; the caller must not
// change them.
func (m *ConsumerMember) Owned() []int32 { return m.owned }

// Reported reports whether the coordinator has heard what the member owns
// since it last changed.
func (m *ConsumerMember) Reported() bool { return !m.report }

// DescribeConsumerGroup is ConsumerGroupDescribe of one group on c.
func DescribeConsumerGroup(c *Conn, group string) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := Do[*kmsg.ConsumerGroupDescribeResponse](c, ConsumerDescribeVersion, req)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	if len(resp.Groups) != 1 {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, fmt.Errorf("ConsumerGroupDescribe of %s: %d groups answered", group, len(resp.Groups))
	}
	return resp.Groups[0], nil
}

// JoinConsumers forms len(addrs) consumer groups of perGroup members each,
// group g at its coordinator addrs[g] and named name(g), every member
// subscribed to topic, up to parallel groups at a time. Each group's
// members heartbeat in rounds (every 50 ms, so that the assignment
// interval lets each new target through) until the group is Stable with
// all of them at its epoch and every member has reported what it owns, or
// until deadline. The set-up connections are closed; the members live on
// (their session timeout is the broker's).
func JoinConsumers(addrs []string, clientID, topic string, perGroup, parallel int, name func(g int) string, deadline time.Time) ([]*ConsumerMember, error) {
	var (
		mu      sync.Mutex
		members = make([]*ConsumerMember, 0, len(addrs)*perGroup)
	)
	err := Parallel(len(addrs), parallel, func(g int) error {
		conns, err := DialN(addrs[g], min(4, perGroup), clientID)
		if err != nil {
			return err
		}
		defer CloseAll(conns)
		group := name(g)
		gm := make([]*ConsumerMember, perGroup)
		for i := range gm {
			gm[i] = NewConsumerMember(group, fmt.Sprintf("%s-m%04d-%08x", group, i, rand.Uint32()), topic)
		}
		for round := 0; ; round++ {
			for i, m := range gm {
				if _, err := m.Beat(conns[i%len(conns)]); err != nil {
					return err
				}
			}
			d, err := DescribeConsumerGroup(conns[0], group)
			if err != nil {
				return err
			}
			if d.ErrorCode == 0 && d.State == "Stable" && len(d.Members) == len(gm) {
				settled := true
				for _, m := range gm {
					settled = settled && m.Reported() && m.Epoch == d.Epoch
				}
				if settled {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("consumer group %s not settled after %d rounds: state %s, %d members, epoch %d", group, round, d.State, len(d.Members), d.Epoch)
			}
			time.Sleep(50 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		members = append(members, gm...)
		return nil
	})
	return members, err
}

// ConsumerHeartbeats sends one plain ConsumerGroupHeartbeat (id and epoch
// only, what a settled client sends) for each member on c, with up to
// depth in flight, and checks every answer is NONE at the same epoch with
// no new assignment. If lat is not nil it is given each heartbeat's time
// from send to answer.
func ConsumerHeartbeats(c *Conn, members []*ConsumerMember, depth int, lat func(time.Duration)) error {
	return Pipelined(c, members, depth,
		func(m *ConsumerMember) kmsg.Request {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.SetVersion(ConsumerHeartbeatVersion)
			req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = m.Group, m.ID, m.Epoch, -1
			return req
		},
		func(m *ConsumerMember, r kmsg.Response, took time.Duration) error {
			resp := r.(*kmsg.ConsumerGroupHeartbeatResponse)
			if resp.ErrorCode != 0 || resp.MemberEpoch != m.Epoch || resp.Assignment != nil {
				return fmt.Errorf("heartbeat of %s in %s at epoch %d: %v, epoch %d, assignment %v", m.ID, m.Group, m.Epoch, kerr.ErrorForCode(resp.ErrorCode), resp.MemberEpoch, resp.Assignment != nil)
			}
			if lat != nil {
				lat(took)
			}
			return nil
		})
}

// LeaveConsumers makes each member leave its group (a heartbeat at epoch
// -1) on c, with up to depth in flight.
func LeaveConsumers(c *Conn, members []*ConsumerMember, depth int) error {
	var errs []error
	err := Pipelined(c, members, depth,
		func(m *ConsumerMember) kmsg.Request {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.SetVersion(ConsumerHeartbeatVersion)
			req.Group, req.MemberID, req.MemberEpoch = m.Group, m.ID, -1
			return req
		},
		func(m *ConsumerMember, r kmsg.Response, _ time.Duration) error {
			if code := r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; code != 0 {
				errs = append(errs, fmt.Errorf("leave of %s in %s: %w", m.ID, m.Group, kerr.ErrorForCode(code)))
			}
			return nil
		})
	return errors.Join(append(errs, err)...)
}
