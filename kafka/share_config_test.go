package kafka

import (
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/global"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/topics"
)

// TestParseISODuration: the durations Java's Duration.parse takes (and so
// Kafka's share.auto.offset.reset by_duration:, KIP-1106), and those it
// refuses.
func TestParseISODuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"PT10S", 10 * time.Second, true},
		{"PT0S", 0, true},
		{"P1D", 24 * time.Hour, true},
		{"P1DT2H30M", 26*time.Hour + 30*time.Minute, true},
		{"pt1h", time.Hour, true},
		{"PT1.5S", 1500 * time.Millisecond, true},
		{"PT0,000000001S", time.Nanosecond, true},
		{"PT-0.5S", -500 * time.Millisecond, true},
		{"-PT10S", -10 * time.Second, true},
		{"PT1H-10M", 50 * time.Minute, true},
		{"+PT+1M", time.Minute, true},
		{"P106751D", 106751 * 24 * time.Hour, true},
		{"P1000000D", math.MaxInt64, true}, // past Go's durations: capped
		{"P", 0, false},
		{"PT", 0, false},
		{"P1DT", 0, false},
		{"T1H", 0, false},
		{"1H", 0, false},
		{"PT1.5H", 0, false},            // a fraction only of seconds
		{"PT1S1H", 0, false},            // H, M, S in order
		{"P1H", 0, false},               // a time part after T only
		{"PT1D", 0, false},              // days before T
		{"P1W", 0, false},               // no weeks, months or years
		{"PT1.0000000001S", 0, false},   // nine decimals at most
		{"P106751991167301D", 0, false}, // Java's long seconds overflow
		{"", 0, false},
	} {
		got, ok := parseISODuration(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseISODuration(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestParseShareReset: share.auto.offset.reset as Kafka's
// ShareGroupAutoOffsetResetStrategy reads it.
func TestParseShareReset(t *testing.T) {
	for _, tc := range []struct {
		in    string
		reset sharestate.Reset
		age   time.Duration
		ok    bool
	}{
		{"latest", sharestate.ResetLatest, 0, true},
		{" EARLIEST ", sharestate.ResetEarliest, 0, true},
		{"by_duration:PT1H", sharestate.ResetByDuration, time.Hour, true},
		{"BY_DURATION:P2D", sharestate.ResetByDuration, 48 * time.Hour, true},
		{"by_duration:PT0S", sharestate.ResetByDuration, 0, true},
		{"by_duration:-PT1S", sharestate.ResetLatest, 0, false},
		{"by_duration:", sharestate.ResetLatest, 0, false},
		{"by_duration", sharestate.ResetLatest, 0, false},
		{"latest:PT1H", sharestate.ResetLatest, 0, false},
		{"none", sharestate.ResetLatest, 0, false},
		{"", sharestate.ResetLatest, 0, false},
	} {
		r, age, ok := parseShareReset(tc.in)
		if r != tc.reset || age != tc.age || ok != tc.ok {
			t.Errorf("parseShareReset(%q) = %v %v %v; want %v %v %v", tc.in, r, age, ok, tc.reset, tc.age, tc.ok)
		}
	}
}

// TestShareGroupConfig: what ShareFetch applies of a share group's
// configs: each the group sets, and zero (the share coordinator's
// default) for what it does not; another tenant's group of the same name
// and a group that sets nothing get the defaults.
func TestShareGroupConfig(t *testing.T) {
	env := newFuzzEnv(t)
	s, err := New(Config{Topics: env.log, Groups: fuzzGroups(t), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.applyConfigs(&global.Snapshot{Configs: map[record.ConfigResource]map[string]string{
		{Type: record.ConfigGroup, Name: topics.Internal("", "set")}: {
			"share.auto.offset.reset":          "by_duration:PT30M",
			"share.delivery.count.limit":       "3",
			"share.record.lock.duration.ms":    "20000",
			"share.partition.max.record.locks": "500",
			"share.isolation.level":            "read_committed",
		},
		{Type: record.ConfigGroup, Name: topics.Internal("", "some")}: {
			"share.auto.offset.reset":     "earliest",
			"share.heartbeat.interval.ms": "6000",
		},
	}})
	for _, tc := range []struct {
		tenant, group string
		want          shareGroupConfig
	}{
		{"", "set", shareGroupConfig{reset: sharestate.ResetByDuration, resetAge: 30 * time.Minute,
			limits: sharestate.Limits{DeliveryLimit: 3, LockDuration: 20 * time.Second, MaxInFlight: 500}, readCommitted: true}},
		{"", "some", shareGroupConfig{reset: sharestate.ResetEarliest}},
		{"", "none", shareGroupConfig{}},
		{"acme", "set", shareGroupConfig{}},
	} {
		if got := s.shareGroupConfig(tc.tenant, tc.group); got != tc.want {
			t.Errorf("%s/%s: %+v, want %+v", tc.tenant, tc.group, got, tc.want)
		}
	}
}
