package kafka

// What a share group's configs (KIP-932, the GROUP resource's share.*
// keys, dynamic_configs.go) change in its ShareFetch and
// ShareAcknowledge: resolved once per snapshot of the global unit, for
// each group that sets some and for every other group (as the machines'
// group configs, resolveGroupConfig), the group's own over the defaults.

import (
	"math"
	"regexp"
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
	// limits are share.delivery.count.limit, share.record.lock.duration.ms
	// and share.partition.max.record.locks; a zero field, where the group
	// sets none, is the share coordinator's default (the node's
	// group.share.* flags).
	limits sharestate.Limits
	// readCommitted is share.isolation.level read_committed.
	readCommitted bool
	// dlqTopic is errors.deadletterqueue.topic.name (limits.DeadLetter
	// is whether it is set), dlqCopy errors.deadletterqueue.copy.record.enable.
	dlqTopic string
	dlqCopy  bool
}

// shareGroupConfig is group of tenant's share configs, from the configs
// published.
func (s *Server) shareGroupConfig(tenant, group string) shareGroupConfig {
	d := s.dyn.Load()
	if len(d.share) > 0 {
		if c, ok := d.share[topics.Internal(tenant, group)]; ok {
			return c
		}
	}
	return d.shareOther
}

// resolveShareConfig is shareGroupConfig's answer for the group with
// internal name group ("": one that sets nothing), from the configs
// published.
func (s *Server) resolveShareConfig(group string) shareGroupConfig {
	var c shareGroupConfig
	c.reset, c.resetAge, _ = parseShareReset(s.groupValue(group, "share.auto.offset.reset").value)
	c.readCommitted = strings.EqualFold(strings.TrimSpace(s.groupValue(group, "share.isolation.level").value), "read_committed")
	// The group's own value, else 0: the share coordinator's default.
	own := func(name string) int64 {
		r := s.groupValue(group, name)
		if r.source != kmsg.ConfigSourceGroupConfig {
			return 0
		}
		n, err := strconv.ParseInt(strings.TrimSpace(r.value), 10, 32)
		if err != nil || n < 0 {
			return 0
		}
		return n
	}
	c.limits.LockDuration = time.Duration(own("share.record.lock.duration.ms")) * time.Millisecond
	c.limits.DeliveryLimit = int16(min(own("share.delivery.count.limit"), math.MaxInt16))
	c.limits.MaxInFlight = int(own("share.partition.max.record.locks"))
	c.dlqTopic = strings.TrimSpace(s.groupValue(group, "errors.deadletterqueue.topic.name").value)
	c.limits.DeadLetter = c.dlqTopic != ""
	c.dlqCopy = strings.EqualFold(strings.TrimSpace(s.groupValue(group, "errors.deadletterqueue.copy.record.enable").value), "true")
	return c
}

// parseShareReset reads share.auto.offset.reset as Kafka's
// ShareGroupAutoOffsetResetStrategy.fromString (KIP-1106): latest,
// earliest (either case), or by_duration: and an ISO-8601 duration that is
// not negative. ok is false for anything else, which reads as latest.
func parseShareReset(v string) (r sharestate.Reset, age time.Duration, ok bool) {
	typ, arg, hasArg := strings.Cut(strings.TrimSpace(v), ":")
	switch strings.ToLower(typ) {
	case "latest":
		return sharestate.ResetLatest, 0, !hasArg
	case "earliest":
		return sharestate.ResetEarliest, 0, !hasArg
	case "by_duration":
		if d, ok := parseISODuration(arg); ok && hasArg && d >= 0 {
			return sharestate.ResetByDuration, d, true
		}
	}
	return sharestate.ResetLatest, 0, false
}

// isoDuration is the text Java's Duration.parse takes: an optional sign,
// P, days, then T and hours, minutes and seconds (with up to nine
// decimals, after a dot or a comma), each signed and optional, in either
// case.
var isoDuration = regexp.MustCompile(`^(?i)([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// parseISODuration reads an ISO-8601 duration as Java's Duration.parse
// (PnDTnHnMn.nS): at least one part, and a T only before a time part; a
// part or a sum that overflows Java's long seconds is refused, as Java's
// ArithmeticException. A negative duration comes back as such (Kafka
// refuses it as a reset); one beyond Go's (about 292 years) is capped at
// it, the log's start as a reset either way.
func parseISODuration(v string) (time.Duration, bool) {
	m := isoDuration.FindStringSubmatch(v)
	if m == nil || (m[2] == "" && m[3] == "") || (m[3] != "" && m[4] == "" && m[5] == "" && m[6] == "") {
		return 0, false
	}
	var sec int64
	for _, p := range []struct {
		text string
		unit int64
	}{{m[2], 86400}, {m[4], 3600}, {m[5], 60}, {m[6], 1}} {
		if p.text == "" {
			continue
		}
		n, err := strconv.ParseInt(p.text, 10, 64)
		if err != nil || n > math.MaxInt64/p.unit || n < math.MinInt64/p.unit {
			return 0, false
		}
		n *= p.unit
		if (n > 0 && sec > math.MaxInt64-n) || (n < 0 && sec < math.MinInt64-n) {
			return 0, false
		}
		sec += n
	}
	var nanos int64
	if f := m[7]; f != "" {
		nanos, _ = strconv.ParseInt((f + "000000000")[:9], 10, 64)
		if strings.HasPrefix(m[6], "-") {
			nanos = -nanos
		}
	}
	if m[1] == "-" {
		if sec == math.MinInt64 {
			return 0, false
		}
		sec, nanos = -sec, -nanos
	}
	switch maxSec := int64(math.MaxInt64 / time.Second); {
	case sec < 0 && sec < -maxSec:
		return math.MinInt64, true
	case sec >= maxSec:
		return math.MaxInt64, true
	}
	return time.Duration(sec)*time.Second + time.Duration(nanos), true
}
