package topics

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cohort-dev/cohort/coordinator/global"
)

// RecordError is one record of a produced batch that the topic refuses,
// by its index in the batch: an entry of Kafka's ProduceResponse
// RecordErrors (v8+, KIP-467).
type RecordError struct {
	Index   int32
	Message string
}

// RecordsError refuses a whole batch for some of its records, as Kafka's
// RecordValidationException does: nothing of the batch is appended.
// errors.Is(err, ErrInvalidRecord) holds (Kafka's INVALID_RECORD), and
// Error is Kafka's message for it, the response's ErrorMessage.
type RecordsError struct {
	Records []RecordError // by index, ascending, as clients match them
}

// Error is Kafka's LogValidator.processRecordErrors message.
func (e *RecordsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: [", len(e.Records))
	for i, r := range e.Records[:min(len(e.Records), 3)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "RecordError(batchIndex=%d, message='%s')", r.Index, r.Message)
	}
	b.WriteString("]")
	return b.String()
}

// Unwrap makes a RecordsError an ErrInvalidRecord.
func (e *RecordsError) Unwrap() error { return ErrInvalidRecord }

// Compacted reports whether the topic's cleanup.policy, a list such as
// "compact,delete", includes compact (Kafka's LogConfig.compact). Cohort
// does not compact old records yet; a compacted topic only refuses
// records without a key (CheckRecords).
func (t *Topic) Compacted() bool {
	v, _ := t.Config("cleanup.policy")
	return slices.Contains(global.SplitList(v), "compact")
}

// CheckRecords checks what the topic asks of each record of batch b,
// produced to partition, before Partition.Append appends it: on a
// compacted topic every record needs a key, as Kafka's
// LogValidator.validateKey, transactional batches included. It returns a
// *RecordsError naming every keyless record, or nil.
//
// A batch Append refuses as a whole (not one v2 batch, a bad CRC, a
// control batch, larger than max.message.bytes, records that do not
// decode) passes, for Append to refuse with its own error: Kafka checks
// the batch, and decodes every record, before it reports record errors.
// A compacted topic's batches are so decoded twice, here and in Append;
// the check belongs in Append's walk once the partition knows its
// cleanup.policy as it knows its other configs (setConfigs).
func (t *Topic) CheckRecords(partition int32, b []byte) error {
	if !t.Compacted() {
		return nil
	}
	h, err := validateBatch(b)
	if limit := t.MaxBatchBytes(); err != nil || (limit > 0 && len(b) > limit) {
		return nil
	}
	_, name := Owner(t.Name) // as the client knows it
	var keyless []RecordError
	if err := walk(b, h, true, func(r recordInfo) bool {
		if r.keyLen < 0 {
			keyless = append(keyless, RecordError{
				Index:   r.offsetDelta, // the walk checks it counts up from 0
				Message: fmt.Sprintf("Compacted topic cannot accept message without key in topic partition %s-%d", name, partition),
			})
		}
		return true
	}); err != nil || len(keyless) == 0 {
		return nil
	}
	return &RecordsError{Records: keyless}
}
