package kafka_test

// A tiny Kafka client for the wire tests: it writes requests exactly as a
// client would (size, request header v1 or v2, kmsg body) and reads the
// responses back with no retries, version negotiation or connection
// management in the way, so a test sees precisely what the server sent. It
// also builds RecordBatch v2 bytes by hand, so tests can send batches no real
// client would.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ioTimeout bounds every read and write of the raw client. It is generous:
// it only turns a server that never answers into a failure instead of a
// hung test.
const ioTimeout = 30 * time.Second

type rawClient struct {
	t    testing.TB
	nc   net.Conn
	br   *bufio.Reader
	f    *kmsg.RequestFormatter
	corr int32
}

// dial connects to addr; the connection is closed when the test ends.
func dial(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{
		t:  t,
		nc: nc,
		br: bufio.NewReader(nc),
		f:  kmsg.NewRequestFormatter(kmsg.FormatterClientID("cohort-rawclient")),
	}
}

// frame encodes req at its current version with the next correlation id:
// size, header (v2 with an empty tag section when flexible) and body.
func (c *rawClient) frame(req kmsg.Request) ([]byte, int32) {
	c.corr++
	return c.f.AppendRequest(nil, req, c.corr), c.corr
}

// send writes req and returns its correlation id.
func (c *rawClient) send(req kmsg.Request) int32 {
	c.t.Helper()
	b, corr := c.frame(req)
	c.write(b)
	return corr
}

// write writes raw bytes.
func (c *rawClient) write(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one response frame and returns its correlation id and
// what follows it.
func (c *rawClient) readFrame(timeout time.Duration) (int32, []byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return 0, nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 256<<20 {
		return 0, nil, errors.New("bad response size")
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(buf)), buf[4:], nil
}

// recv reads the response to req, sent with correlation id corr.
func (c *rawClient) recv(req kmsg.Request, corr int32) kmsg.Response {
	c.t.Helper()
	got, body, err := c.readFrame(ioTimeout)
	if err != nil {
		c.t.Fatalf("reading the response to %s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	if got != corr {
		c.t.Fatalf("%s v%d: response correlation id %d, want %d", kmsg.NameForKey(req.Key()), req.GetVersion(), got, corr)
	}
	return decodeResponse(c.t, req, body)
}

// do sends req and reads its response.
func (c *rawClient) do(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	return c.recv(req, c.send(req))
}

// roundTrip sends req at version v and returns the typed response.
func roundTrip[R kmsg.Response](c *rawClient, v int16, req kmsg.Request) R {
	c.t.Helper()
	req.SetVersion(v)
	resp, ok := c.do(req).(R)
	if !ok {
		c.t.Fatalf("%s: unexpected response type", kmsg.NameForKey(req.Key()))
	}
	return resp
}

// at sets req's version and returns it.
func at[R kmsg.Request](v int16, req R) R {
	req.SetVersion(v)
	return req
}

// rawFrame builds a request frame with a v1 header (no tag section) and an
// arbitrary body.
func rawFrame(key, version int16, corr int32, body []byte) []byte {
	b := []byte{0, 0, 0, 0, byte(key >> 8), byte(key), byte(version >> 8), byte(version)}
	b = append(b, byte(corr>>24), byte(corr>>16), byte(corr>>8), byte(corr))
	b = append(b, 0, 4, 'r', 'a', 'w', '!')
	b = append(b, body...)
	n := len(b) - 4
	b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return b
}

// requestBytes is req at version v as a frame body (header and request,
// without the size).
func requestBytes(v int16, req kmsg.Request) []byte {
	req.SetVersion(v)
	return kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)[4:]
}

// decodeResponse parses a response body (after the correlation id) at the
// request's version. Flexible responses start with the header's tagged
// fields, except ApiVersions, whose response header is always v0
// (KIP-511). The whole body must be consumed.
func decodeResponse(t testing.TB, req kmsg.Request, body []byte) kmsg.Response {
	t.Helper()
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	name := kmsg.NameForKey(req.Key())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		if len(body) == 0 || body[0] != 0 {
			t.Fatalf("%s v%d: response header tag section %x, want one empty", name, req.GetVersion(), body[:min(len(body), 1)])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("%s v%d: response does not decode: %v", name, req.GetVersion(), err)
	}
	// kmsg ignores trailing bytes; a response with any is malformed.
	if re := resp.AppendTo(nil); len(re) != len(body) {
		t.Fatalf("%s v%d: response is %d bytes, its decoded form re-encodes to %d", name, req.GetVersion(), len(body), len(re))
	}
	return resp
}

// expectClosed reads until the server closes the connection, failing on any
// response or if it stays open for timeout.
func (c *rawClient) expectClosed(timeout time.Duration) {
	c.t.Helper()
	corr, _, err := c.readFrame(timeout)
	switch {
	case err == nil:
		c.t.Fatalf("got a response (correlation id %d), want the connection closed", corr)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
	default:
		c.t.Fatalf("want the connection closed, got %v", err)
	}
}

// expectOpen checks that the connection still answers requests.
func (c *rawClient) expectOpen() {
	c.t.Helper()
	resp := roundTrip[*kmsg.ApiVersionsResponse](c, 0, kmsg.NewPtrApiVersionsRequest())
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		c.t.Fatalf("ApiVersions on a connection that should be healthy: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
}

// batch describes one RecordBatch v2 to encode.
type batch struct {
	ProducerID int64 // -1: not idempotent
	Epoch      int16
	Seq        int32
	Timestamps []int64 // one per value; nil means 1000, 1001, ...
	Values     [][]byte
}

// plain is a non-idempotent batch of n records of size bytes each.
func plain(n, size int) batch {
	b := batch{ProducerID: -1, Epoch: -1, Seq: -1}
	for i := range n {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte('a' + (i+j)%26)
		}
		b.Values = append(b.Values, v)
	}
	return b
}

// idempotent is a batch of n small records from producer id at epoch,
// starting at sequence seq.
func idempotent(id int64, epoch int16, seq int32, n int) batch {
	b := plain(n, 8)
	b.ProducerID, b.Epoch, b.Seq = id, epoch, seq
	return b
}

// encode returns the batch as it goes on the wire, CRC included.
func (b batch) encode() []byte {
	ts := b.Timestamps
	if ts == nil {
		for i := range b.Values {
			ts = append(ts, int64(1000+i))
		}
	}
	base, maxTS := ts[0], ts[0]
	var recs []byte
	for i, v := range b.Values {
		r := kmsg.Record{TimestampDelta64: ts[i] - base, OffsetDelta: int32(i), Value: v}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // less the one-byte varint of 0
		recs = r.AppendTo(recs)
		maxTS = max(maxTS, ts[i])
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(b.Values) - 1),
		FirstTimestamp:       base,
		MaxTimestamp:         maxTS,
		ProducerID:           b.ProducerID,
		ProducerEpoch:        b.Epoch,
		FirstSequence:        b.Seq,
		NumRecords:           int32(len(b.Values)),
		Records:              recs,
	}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	fixCRC(out)
	return out
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fixCRC recomputes a batch's CRC-32C, which covers everything from the
// attributes on.
func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
}

// fetchedBatch is one batch of a fetch response, with its records.
type fetchedBatch struct {
	kmsg.RecordBatch
	Records []kmsg.Record
}

// parseBatches splits fetched record bytes into batches and records,
// checking each batch's CRC.
func parseBatches(t testing.TB, b []byte) []fetchedBatch {
	t.Helper()
	var out []fetchedBatch
	for len(b) > 0 {
		if len(b) < 61 {
			t.Fatalf("%d trailing bytes, short of a batch header", len(b))
		}
		size := 12 + int(int32(binary.BigEndian.Uint32(b[8:])))
		if size < 61 || size > len(b) {
			t.Fatalf("batch of %d bytes in %d", size, len(b))
		}
		raw := b[:size]
		b = b[size:]
		if got, want := crc32.Checksum(raw[21:], castagnoli), binary.BigEndian.Uint32(raw[17:]); got != want {
			t.Fatalf("fetched batch CRC %08x, want %08x", got, want)
		}
		var fb fetchedBatch
		if err := fb.RecordBatch.ReadFrom(raw); err != nil {
			t.Fatalf("fetched batch: %v", err)
		}
		recs := fb.RecordBatch.Records
		for len(recs) > 0 {
			n, w := binary.Varint(recs)
			if w <= 0 || n < 0 || int(n) > len(recs)-w {
				t.Fatalf("bad record length in fetched batch")
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:w+int(n)]); err != nil {
				t.Fatalf("fetched record: %v", err)
			}
			fb.Records = append(fb.Records, r)
			recs = recs[w+int(n):]
		}
		if len(fb.Records) != int(fb.NumRecords) {
			t.Fatalf("fetched batch has %d records, header says %d", len(fb.Records), fb.NumRecords)
		}
		out = append(out, fb)
	}
	return out
}
