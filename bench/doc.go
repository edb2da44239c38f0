// Package bench holds throughput benchmarks of Cohort's topic log as a
// Kafka client sees it: franz-go producing and consuming 1 KiB records over
// loopback, against a Cohort node and, in the same run, against franz-go's
// in-memory kfake for comparison. See BENCHMARKS.md at the repository root
// for how to run them and the measured numbers.
//
// The package has only benchmarks: no timing threshold is ever a test.
package bench
