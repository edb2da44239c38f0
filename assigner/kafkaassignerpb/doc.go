// Package kafkaassignerpb is the Go code generated from kafka-assigner's
// gRPC contract (assigner/proto/kafka_assigner/v1/kafka_assigner.proto):
// the messages and the KafkaAssigner client and server. Regenerate it with
// assigner/proto/gen.sh; edit only this file by hand.
package kafkaassignerpb
