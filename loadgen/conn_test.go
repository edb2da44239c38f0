package loadgen

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"testing"
)

// TestAnswerBuffered: a response counts as read only when its whole frame
// is in the read buffer, so Pipelined refills only after taking it.
func TestAnswerBuffered(t *testing.T) {
	frame := func(body int) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(body))
		return append(b, make([]byte, body)...)
	}
	two := append(frame(10), frame(20)...)
	for _, c := range []struct {
		name   string
		stream []byte
		read   int // bytes taken from the buffer before asking
		want   bool
	}{
		{"nothing", nil, 0, false},
		{"part of the size", two[:3], 0, false},
		{"size without its body", two[:13], 0, false},
		{"a whole frame", two[:14], 0, true},
		{"two frames", two, 0, true},
		{"the second frame, whole", two, 14, true},
		{"the second frame, short", two[:30], 14, false},
		{"all taken", two, len(two), false},
	} {
		conn := &Conn{br: bufio.NewReaderSize(bytes.NewReader(c.stream), 64)}
		if len(c.stream) > 0 {
			conn.br.Peek(1) // fill the buffer with what the socket has
		}
		conn.br.Discard(c.read)
		if got := conn.answerBuffered(); got != c.want {
			t.Errorf("%s: answerBuffered = %v, want %v", c.name, got, c.want)
		}
	}
}
