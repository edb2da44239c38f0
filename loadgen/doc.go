// Package loadgen drives a Kafka-protocol broker's group coordinator with
// raw clients, for load generation and benchmarks: a connection that
// frames kmsg requests itself (4-byte size, request header, correlation
// ids), classic-protocol members that join, sync and heartbeat, closed
// loops of simple offset commits, and pipelined heartbeats, each timing
// what it does.
//
// It is shared by the in-process benchmarks (bench/) and the out-of-process
// `cohort bench` command, so that both measure the same thing the same
// way. It uses no client library's retries, backoffs or heartbeat threads,
// so that what is timed is the broker and the wire. It must not import the
// server's packages: it works against any Kafka-compatible broker.
package loadgen
