package kafka

import (
	"errors"

	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
)

// errorCode maps an error from the topic log to the Kafka error code a
// broker sends for it. Anything unexpected is an I/O failure:
// KAFKA_STORAGE_ERROR, which clients retry.
func errorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, topics.ErrCorrupt):
		return kerr.CorruptMessage.Code
	case errors.Is(err, topics.ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, topics.ErrMagic):
		// Kafka's ProduceRequest.validateRecords: v3+ carries magic 2 only,
		// and anything else is an InvalidRecordException.
		return kerr.InvalidRecord.Code
	case errors.Is(err, topics.ErrMessageTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, topics.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, topics.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, topics.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, topics.ErrDeleted), errors.Is(err, topics.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, topics.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, topics.ErrInvalidTopic):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, topics.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, topics.ErrInvalidConfig):
		return kerr.InvalidConfig.Code
	}
	return kerr.KafkaStorageError.Code
}
