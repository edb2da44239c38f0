package kafka

// What a share group's configs (KIP-932, the GROUP resource's share.*
// keys, dynamic_configs.go) change in its ShareFetch and
// ShareAcknowledge: resolved per request from the configs published,
// the group's own over the defaults.

import (
	"strconv"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareGroupConfig is a share group's configs as ShareFetch applies them.
type shareGroupConfig struct {
	// reset is share.auto.offset.reset; for by_duration, resetAge is
	// the duration.
	reset    sharestate.Reset
	resetAge time.Duration
	// limits are the delivery limit, lock duration and in-flight limit;
	// a zero field is the share coordinator's default.
	limits sharestate.Limits
	// readCommitted is share.isolation.level read_committed.
	readCommitted bool
}

// shareGroupConfig resolves group of tenant's share configs.
func (s *Server) shareGroupConfig(tenant, group string) shareGroupConfig {
	name := topics.Internal(tenant, group)
	var c shareGroupConfig
	c.reset, c.resetAge = parseShareReset(s.groupValue(name, "share.auto.offset.reset").value)
	if r := s.groupValue(name, "share.record.lock.duration.ms"); r.source == kmsg.ConfigSourceGroupConfig {
		if n, err := strconv.ParseInt(r.value, 10, 64); err == nil && n > 0 {
			c.limits.LockDuration = time.Duration(n) * time.Millisecond
		}
	}
	return c
}

// parseShareReset reads share.auto.offset.reset: latest, earliest, or
// by_duration:<ISO-8601 duration> (KIP-1106). Anything else is latest.
func parseShareReset(v string) (sharestate.Reset, time.Duration) {
	switch v = strings.ToLower(strings.TrimSpace(v)); {
	case v == "earliest":
		return sharestate.ResetEarliest, 0
	case strings.HasPrefix(v, "by_duration:"):
		if d, ok := parseISODuration(strings.TrimPrefix(v, "by_duration:")); ok {
			return sharestate.ResetByDuration, d
		}
	}
	return sharestate.ResetLatest, 0
}

// parseISODuration reads the ISO-8601 durations Java's Duration.parse
// takes: PnDTnHnMn.nS, each part optional, at least one present.
func parseISODuration(v string) (time.Duration, bool) {
	v = strings.ToUpper(v)
	if !strings.HasPrefix(v, "P") || len(v) < 3 {
		return 0, false
	}
	v = v[1:]
	var d time.Duration
	inTime := false
	parts := 0
	for v != "" {
		if v[0] == 'T' {
			if inTime {
				return 0, false
			}
			inTime, v = true, v[1:]
			continue
		}
		i := strings.IndexAny(v, "DHMS")
		if i <= 0 {
			return 0, false
		}
		n, err := strconv.ParseFloat(v[:i], 64)
		if err != nil || n < 0 {
			return 0, false
		}
		unit := map[byte]time.Duration{'D': 24 * time.Hour, 'H': time.Hour, 'M': time.Minute, 'S': time.Second}[v[i]]
		if (v[i] == 'D') == inTime {
			return 0, false
		}
		d += time.Duration(n * float64(unit))
		parts++
		v = v[i+1:]
	}
	return d, parts > 0
}
