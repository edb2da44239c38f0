package global

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/cohort-dev/cohort/record"
)

// Errors of the topic commands, the reply's Out; the topic log's own.
var (
	ErrTopicExists       = errors.New("topic already exists")
	ErrUnknownTopic      = errors.New("unknown topic")
	ErrInvalidPartitions = errors.New("invalid partition count")
)

// Placement is what placing new partitions needs: the live nodes (nil or
// empty: Self alone) and the node asking.
type Placement struct {
	Live []int32
	Self int32
}

func (s *State) createTopic(c CreateTopic) any {
	if _, ok := s.topics[c.Name]; ok {
		return ErrTopicExists
	}
	t := record.Topic{ID: c.ID, Leaders: slices.Clone(c.Leaders), Configs: maps.Clone(c.Configs)}
	if t.Leaders == nil {
		t.Leaders = s.place(c.Placement, int(c.Partitions))
	}
	if len(t.Leaders) == 0 {
		return ErrInvalidPartitions
	}
	if len(t.Configs) == 0 {
		t.Configs = nil
	}
	s.rec.Emit(record.TopicKey(c.Name), t.Encode())
	return s.topics[c.Name]
}

func (s *State) growTopic(c GrowTopic) any {
	t, ok := s.topics[c.Name]
	if !ok {
		return ErrUnknownTopic
	}
	have := int32(len(t.Leaders))
	if c.Count <= have || c.Leaders != nil && int32(len(c.Leaders)) != c.Count-have {
		return ErrInvalidPartitions
	}
	leaders := c.Leaders
	if leaders == nil {
		leaders = s.place(c.Placement, int(c.Count-have))
	}
	t.Leaders = append(slices.Clone(t.Leaders), leaders...)
	s.rec.Emit(record.TopicKey(c.Name), t.Encode())
	return s.topics[c.Name]
}

func (s *State) bumpLeaderEpochs(node int32) {
	for _, name := range slices.Sorted(maps.Keys(s.topics)) {
		t := s.topics[name]
		if !slices.Contains(t.Leaders, node) {
			continue
		}
		epochs := make([]int32, len(t.Leaders))
		for i, l := range t.Leaders {
			epochs[i] = t.Epoch(int32(i))
			if l == node {
				epochs[i]++
			}
		}
		t.Epochs = epochs
		s.rec.Emit(record.TopicKey(name), t.Encode())
	}
}

// place chooses leaders for n new partitions: each goes to the live node
// that leads the fewest partitions so far, ties going round robin (in
// node id order) from after the previous choice.
func (s *State) place(p Placement, n int) []int32 {
	nodes := slices.Clone(p.Live)
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)
	if len(nodes) == 0 {
		nodes = []int32{p.Self}
	}
	counts := make(map[int32]int, len(nodes))
	for _, t := range s.topics {
		for _, id := range t.Leaders {
			counts[id]++
		}
	}
	out := make([]int32, n)
	next := 0
	for i := range out {
		best := next % len(nodes)
		for k := 1; k < len(nodes); k++ {
			j := (next + k) % len(nodes)
			if counts[nodes[j]] < counts[nodes[best]] {
				best = j
			}
		}
		out[i] = nodes[best]
		counts[nodes[best]]++
		next = best + 1
	}
	return out
}

func (s *State) reserveIDs(c ReserveIDs) any {
	var first int64
	if v, ok := s.meta[c.Name]; ok {
		if len(v) != 8 {
			return fmt.Errorf("global: corrupt id counter %s: %x", c.Name, v)
		}
		first = int64(binary.BigEndian.Uint64(v))
	}
	if c.N <= 0 {
		return fmt.Errorf("global: reserve %d ids", c.N)
	}
	s.rec.Emit(record.MetaKey(c.Name), record.MetaValue(binary.BigEndian.AppendUint64(nil, uint64(first+c.N))))
	return first
}
