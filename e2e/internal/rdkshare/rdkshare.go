// Package rdkshare drives librdkafka's share consumer (KIP-932, the
// rd_kafka_share_* C API, a preview in librdkafka 2.15.1) from Go, for
// the end-to-end tests: confluent-kafka-go v2.15.1 bundles that
// librdkafka but does not wrap its share consumer.
//
// Linking: the package declares the C functions it calls itself
// (rdkshare.h, copied from rdkafka.h) and links nothing of its own. It
// imports confluent-kafka-go's kafka package, whose #cgo LDFLAGS put the
// static librdkafka it bundles (or, under its "dynamic" build tag, the
// system's) on the link line of every binary that imports it; the
// linker resolves these declarations from that same library. No copy of
// the library or its header is kept here, and nothing runs at build
// time.
//
// A Consumer is not safe for concurrent use (nor is the C handle).
package rdkshare

/*
#include <stdlib.h>
#include "rdkshare.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"time"
	"unsafe"

	// librdkafka itself, linked by confluent-kafka-go's cgo directives.
	_ "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// AckType is how a record is acknowledged
// (rd_kafka_share_AcknowledgeType_t).
type AckType int

// The acknowledgement types.
const (
	Accept  AckType = 1 // processed: never delivered again
	Release AckType = 2 // not processed: delivered again
	Reject  AckType = 3 // unprocessable: never delivered again (archived)
)

// Error is a librdkafka error: its code (rd_kafka_resp_err_t, negative
// for librdkafka's own, positive for Kafka's), the code's name, and a
// message.
type Error struct {
	Code    int
	Name    string
	Message string
	Fatal   bool
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s (%d): %s", e.Name, e.Code, e.Message)
	if e.Fatal {
		s += " (fatal)"
	}
	return s
}

func errorFromCode(code C.rd_kafka_resp_err_t) error {
	if code == 0 {
		return nil
	}
	return &Error{Code: int(code), Name: C.GoString(C.rd_kafka_err2name(code)), Message: C.GoString(C.rd_kafka_err2str(code))}
}

// errorFrom turns an rd_kafka_error_t into an *Error and destroys it.
func errorFrom(e *C.rd_kafka_error_t) error {
	if e == nil {
		return nil
	}
	defer C.rd_kafka_error_destroy(e)
	code := C.rd_kafka_error_code(e)
	return &Error{
		Code:    int(code),
		Name:    C.GoString(C.rd_kafka_err2name(code)),
		Message: C.GoString(C.rd_kafka_error_string(e)),
		Fatal:   C.rd_kafka_error_is_fatal(e) != 0,
	}
}

// Logger receives librdkafka's log lines: syslog level, facility, text.
// librdkafka calls it from its own threads.
type Logger func(level int, facility, message string)

//export rdkshareLog
func rdkshareLog(handle C.uintptr_t, level C.int, fac, buf *C.char) {
	if handle == 0 {
		return
	}
	cgo.Handle(handle).Value().(Logger)(int(level), C.GoString(fac), C.GoString(buf))
}

// Consumer is a librdkafka share consumer (rd_kafka_share_t).
type Consumer struct {
	h   *C.rd_kafka_share_t
	log cgo.Handle // 0 without a Logger
}

// New creates a share consumer from librdkafka configuration properties
// (bootstrap.servers and group.id at least; share.acknowledgement.mode
// "explicit" for Acknowledge). A non-nil log receives its log lines.
func New(conf map[string]string, log Logger) (*Consumer, error) {
	cconf := C.rd_kafka_conf_new()
	errstr := (*C.char)(C.malloc(512))
	defer C.free(unsafe.Pointer(errstr))
	for k, v := range conf {
		ck, cv := C.CString(k), C.CString(v)
		res := C.rd_kafka_conf_set(cconf, ck, cv, errstr, 512)
		C.free(unsafe.Pointer(ck))
		C.free(unsafe.Pointer(cv))
		if res != 0 {
			C.rd_kafka_conf_destroy(cconf)
			return nil, fmt.Errorf("rdkshare: %s=%s: %s", k, v, C.GoString(errstr))
		}
	}
	c := &Consumer{}
	if log != nil {
		c.log = cgo.NewHandle(log)
		C.rdkshare_conf_set_logger(cconf, C.uintptr_t(c.log))
	}
	c.h = C.rd_kafka_share_consumer_new(cconf, errstr, 512)
	if c.h == nil {
		C.rd_kafka_conf_destroy(cconf) // not taken on failure
		if c.log != 0 {
			c.log.Delete()
		}
		return nil, fmt.Errorf("rdkshare: rd_kafka_share_consumer_new: %s", C.GoString(errstr))
	}
	return c, nil
}

// Subscribe sets the consumer's subscription (rd_kafka_share_subscribe).
func (c *Consumer) Subscribe(topics ...string) error {
	l := C.rd_kafka_topic_partition_list_new(C.int(len(topics)))
	defer C.rd_kafka_topic_partition_list_destroy(l)
	for _, t := range topics {
		ct := C.CString(t)
		C.rd_kafka_topic_partition_list_add(l, ct, -1) // RD_KAFKA_PARTITION_UA
		C.free(unsafe.Pointer(ct))
	}
	return errorFromCode(C.rd_kafka_share_subscribe(c.h, l))
}

// Message is one record of a Batch.
type Message struct {
	Err           error // a record-level error: then only the position is set
	Topic         string
	Partition     int32
	Offset        int64
	Key, Value    []byte
	DeliveryCount int16 // rd_kafka_message_delivery_count

	m *C.rd_kafka_message_t // valid until the batch is destroyed
}

// Batch is what one Poll returned. Destroy it once every message in it
// is acknowledged.
type Batch struct {
	Messages []*Message
	ms       *C.rd_kafka_messages_t
}

// Destroy frees the batch (rd_kafka_messages_destroy); its messages can
// no longer be acknowledged.
func (b *Batch) Destroy() {
	if b == nil || b.ms == nil {
		return
	}
	for _, m := range b.Messages {
		m.m = nil
	}
	C.rd_kafka_messages_destroy(b.ms)
	b.ms = nil
}

// Poll waits up to timeout for a batch of records (rd_kafka_share_poll).
// It sends the acknowledgements of the batches before. A timeout with
// no records is an empty batch and no error.
func (c *Consumer) Poll(timeout time.Duration) (*Batch, error) {
	var ms *C.rd_kafka_messages_t
	if err := errorFrom(C.rd_kafka_share_poll(c.h, C.int(timeout.Milliseconds()), &ms)); err != nil {
		C.rd_kafka_messages_destroy(ms) // NULL on an error; NULL-safe
		return &Batch{}, err
	}
	b := &Batch{ms: ms}
	if ms == nil {
		return b, nil
	}
	n := C.rd_kafka_messages_count(ms)
	for i := C.size_t(0); i < n; i++ {
		cm := C.rd_kafka_messages_get(ms, i)
		m := &Message{Partition: int32(cm.partition), Offset: int64(cm.offset), m: cm}
		if cm.rkt != nil {
			m.Topic = C.GoString(C.rd_kafka_topic_name(cm.rkt))
		}
		if cm.err != 0 {
			m.Err = errorFromCode(cm.err)
		} else {
			if cm.key != nil {
				m.Key = C.GoBytes(cm.key, C.int(cm.key_len))
			}
			if cm.payload != nil {
				m.Value = C.GoBytes(cm.payload, C.int(cm.len))
			}
			m.DeliveryCount = int16(C.rd_kafka_message_delivery_count(cm))
		}
		b.Messages = append(b.Messages, m)
	}
	return b, nil
}

// Acknowledge acknowledges m, of a batch not yet destroyed
// (rd_kafka_share_acknowledge_type; explicit acknowledgement mode). The
// acknowledgement goes to the broker with the next Poll or CommitSync.
func (c *Consumer) Acknowledge(m *Message, t AckType) error {
	if m.m == nil {
		return fmt.Errorf("rdkshare: acknowledging %s[%d]@%d of a destroyed batch", m.Topic, m.Partition, m.Offset)
	}
	return errorFromCode(C.rd_kafka_share_acknowledge_type(c.h, m.m, C.rd_kafka_share_AcknowledgeType_t(t)))
}

// PartitionResult is the outcome of a commit for one partition.
type PartitionResult struct {
	Topic     string
	Partition int32
	Err       error
}

// CommitSync sends every pending acknowledgement and waits up to
// timeout for the brokers' replies (rd_kafka_share_commit_sync). The
// error is the call's; each partition's outcome is in the results
// (none when nothing was pending).
func (c *Consumer) CommitSync(timeout time.Duration) ([]PartitionResult, error) {
	var l *C.rd_kafka_topic_partition_list_t
	err := errorFrom(C.rd_kafka_share_commit_sync(c.h, C.int(timeout.Milliseconds()), &l))
	if l == nil {
		return nil, err
	}
	defer C.rd_kafka_topic_partition_list_destroy(l)
	elems := unsafe.Slice(l.elems, int(l.cnt))
	out := make([]PartitionResult, 0, len(elems))
	for _, p := range elems {
		out = append(out, PartitionResult{Topic: C.GoString(p.topic), Partition: int32(p.partition), Err: errorFromCode(p.err)})
	}
	return out, err
}

// Close sends the pending acknowledgements and leaves the share group
// (rd_kafka_share_consumer_close), blocking up to about
// socket.timeout.ms. Destroy the consumer after.
func (c *Consumer) Close() error {
	return errorFrom(C.rd_kafka_share_consumer_close(c.h))
}

// Destroy frees the consumer (rd_kafka_share_destroy); no log line is
// delivered after it.
func (c *Consumer) Destroy() error {
	if c.h == nil {
		return nil
	}
	if err := errorFrom(C.rd_kafka_share_destroy(c.h)); err != nil {
		return err
	}
	c.h = nil
	if c.log != 0 {
		c.log.Delete()
		c.log = 0
	}
	return nil
}
