package handoff

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
)

// The commands a shard runtime hands the machine (machine.Request.Cmd).
// Each is answered with a machine.Reply whose Out is nil or an *Error.
type (
	// RegisterCmd is Machine.Register.
	RegisterCmd struct {
		Group, Consumer, Topic string
		Partitions             int32
		Stream                 StreamID
	}
	// DisconnectCmd is Machine.Disconnect.
	DisconnectCmd struct {
		Group, Consumer string
		Stream          StreamID
	}
	// ReadyCmd is Machine.Ready.
	ReadyCmd struct {
		Group, Consumer string
		Partition       TP
	}
	// ReleasedCmd is Machine.Released.
	ReleasedCmd struct {
		Group, Consumer string
		Partition       TP
	}
	// PartitionsCmd is Machine.Partitions.
	PartitionsCmd struct {
		Group, Topic string
		Partitions   int32
	}
)

// Machine returns m as a machine.Machine for the coordinator's shard
// runtime: commands come as Request.Cmd, stream commands leave as pushes
// (a Send, or a Close, as Push.Msg), after the records before them are
// durable.
func (m *Shard) Machine() machine.Machine { return shard{m} }

type shard struct{ m *Shard }

var (
	_ machine.Machine = shard{}
	_ machine.Durable = shard{}
)

func (s shard) Replay(r machine.Record) error { return s.m.Replay(r) }

// DurableState is the machine's: the runtime's invariant check compares
// it with that of a machine rebuilt from the records.
func (s shard) DurableState() string { return s.m.DurableState() }

// Reset, pushed to stream 0 at every load, tells the service that the
// machine was (re)built from the store and knows no stream: every open
// stream must end so that its consumer registers again. (At start-up
// there is none; after a failed store write the runtime reloads the shard
// while streams are still open.)
type Reset struct{}

func (s shard) Loaded(now time.Time) machine.Output {
	out := convert(s.m.Loaded(now))
	out.Pushes = append(out.Pushes, machine.Push{Stream: 0, Msg: Reset{}})
	return out
}

func (s shard) Fire(now time.Time, key string) machine.Output { return convert(s.m.Fire(now, key)) }

func (s shard) Handle(now time.Time, req machine.Request) machine.Output {
	var out Output
	var err error
	switch c := req.Cmd.(type) {
	case RegisterCmd:
		out, err = s.m.Register(now, c.Group, c.Consumer, c.Topic, c.Partitions, c.Stream)
	case DisconnectCmd:
		out = s.m.Disconnect(now, c.Group, c.Consumer, c.Stream)
	case ReadyCmd:
		out, err = s.m.Ready(now, c.Group, c.Consumer, c.Partition)
	case ReleasedCmd:
		out, err = s.m.Released(now, c.Group, c.Consumer, c.Partition)
	case PartitionsCmd:
		out = s.m.Partitions(now, c.Group, c.Topic, c.Partitions)
	default:
		err = &Error{InvalidArgument, "not a warm-handoff command"}
	}
	mo := convert(out)
	reply := machine.Reply{To: req.ID}
	if err != nil {
		reply.Out = err
	}
	mo.Replies = append(mo.Replies, reply)
	return mo
}

func convert(out Output) machine.Output {
	mo := machine.Output{Records: out.Records, Timers: out.Timers}
	for _, s := range out.Sends {
		mo.Pushes = append(mo.Pushes, machine.Push{Stream: uint64(s.Stream), Msg: s})
	}
	for _, c := range out.Closes {
		mo.Pushes = append(mo.Pushes, machine.Push{Stream: uint64(c.Stream), Msg: c})
	}
	return mo
}
