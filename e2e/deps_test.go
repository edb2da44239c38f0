package e2e

import (
	_ "github.com/IBM/sarama"
	_ "github.com/segmentio/kafka-go"
	_ "github.com/twmb/franz-go/pkg/kadm"
	_ "github.com/twmb/franz-go/pkg/kfake"
)
