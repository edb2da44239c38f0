package groups

// GroupType is a Summary's group type: a byte, not a string's 16, as a
// reading holds a summary for each of a million groups and the types
// are three. The zero GroupType is none ("").
type GroupType uint8

const (
	ClassicGroup  GroupType = iota + 1 // also simple groups
	ConsumerGroup                      // KIP-848
	ShareGroup                         // KIP-932
)

// String is the type as ListGroups spells it ("" for the zero
// GroupType).
func (t GroupType) String() string {
	switch t {
	case ClassicGroup:
		return "classic"
	case ConsumerGroup:
		return "consumer"
	case ShareGroup:
		return "share"
	}
	return ""
}

// GroupState is a Summary's group state: a byte, not a string's 16, for
// the same reason as GroupType. It names the states of every type, as
// DescribeGroups, ConsumerGroupDescribe and ShareGroupDescribe spell
// them: a classic group's are Empty, PreparingRebalance,
// CompletingRebalance and Stable (a dead one is not summarised); a
// consumer group's Empty, Assigning, Reconciling and Stable; a share
// group's Empty and Stable. The zero GroupState is none ("").
type GroupState uint8

const (
	StateEmpty GroupState = iota + 1
	StatePreparingRebalance
	StateCompletingRebalance
	StateStable
	StateDead
	StateAssigning
	StateReconciling

	// stateEnd follows the last state, for stateOf to range over them.
	stateEnd
)

// String is the state as the group's describe response spells it (""
// for the zero GroupState).
func (s GroupState) String() string {
	switch s {
	case StateEmpty:
		return "Empty"
	case StatePreparingRebalance:
		return "PreparingRebalance"
	case StateCompletingRebalance:
		return "CompletingRebalance"
	case StateStable:
		return "Stable"
	case StateDead:
		return "Dead"
	case StateAssigning:
		return "Assigning"
	case StateReconciling:
		return "Reconciling"
	}
	return ""
}

// stateOf is the GroupState a group type's state spells name; false if
// it is none of them: a state added to a group type and not here, which
// Shard.Check reports (a summary would show the zero GroupState, "").
func stateOf(name string) (GroupState, bool) {
	for s := StateEmpty; s < stateEnd; s++ {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}
