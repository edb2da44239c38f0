package kafka

// Rate quotas: an organisation's producer_byte_rate, consumer_byte_rate,
// request_rate and request_percentage (package quota), enforced as
// Kafka's client quotas are: every connection of the organisation to
// this node feeds the same windowed rates; a request that takes one over
// its quota is served normally, its response carries the throttle time
// (ThrottleMillis, in every response that has the field), and the
// connection is muted, not read from, for that long once the response is
// on its way (KIP-219: send first, then mute; a client that honours
// ThrottleMillis waits anyway, one that does not is held back by the
// mute). A fetch over consumer_byte_rate still returns its data, as
// Kafka's.
//
// What is measured, per organisation and node:
//   - producer_byte_rate: the frame size of each Produce request;
//   - consumer_byte_rate: the record bytes of each Fetch response;
//   - request_rate: every request (Cohort's quota, requests per second);
//   - request_percentage: the time requests spend in their handlers on
//     the connections' readers, as a percentage of one second per second
//     (Kafka's share of a request-handler thread; waiting on an fsync, a
//     long poll or the group coordinator is not counted, as Kafka does
//     not count purgatory).

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-dev/cohort/quota"
	"github.com/cohort-dev/cohort/security"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Throttle kinds, the kind label of cohort_quota_throttle_seconds_total.
const (
	throttleProduce = "produce"
	throttleFetch   = "fetch"
	throttleRequest = "request"
)

// quotas is a server's rate quota state.
type quotas struct {
	reg    *quota.Registry
	window quota.Window
	orgs   sync.Map // tenant → *orgRates
	// throttled is the throttle time asked for, per organisation and
	// kind, in nanoseconds.
	throttled sync.Map // throttleKey → *atomic.Int64
}

type orgRates struct {
	produce, fetch, requests, time *quota.Rate
}

type throttleKey struct{ org, kind string }

func (q *quotas) rates(tenant string) *orgRates {
	if r, ok := q.orgs.Load(tenant); ok {
		return r.(*orgRates)
	}
	r, _ := q.orgs.LoadOrStore(tenant, &orgRates{
		produce: quota.NewRate(q.window), fetch: quota.NewRate(q.window),
		requests: quota.NewRate(q.window), time: quota.NewRate(q.window),
	})
	return r.(*orgRates)
}

func (q *quotas) note(tenant, kind string, d time.Duration) {
	if d <= 0 {
		return
	}
	k := throttleKey{security.OrgName(tenant), kind}
	v, ok := q.throttled.Load(k)
	if !ok {
		v, _ = q.throttled.LoadOrStore(k, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(int64(d))
}

// QuotaThrottle is the throttle time one organisation's quota of one kind
// ("produce", "fetch" or "request") has asked for since the server
// started.
type QuotaThrottle struct {
	Org, Kind string
	Seconds   float64
}

// QuotaThrottles returns the throttle time asked for by each
// organisation and kind, sorted: for metrics. Kinds overlap in time: a
// request over two quotas counts in both, and its connection is muted
// for the longer.
func (s *Server) QuotaThrottles() []QuotaThrottle {
	var out []QuotaThrottle
	s.quotas.throttled.Range(func(k, v any) bool {
		tk := k.(throttleKey)
		out = append(out, QuotaThrottle{Org: tk.org, Kind: tk.kind, Seconds: time.Duration(v.(*atomic.Int64).Load()).Seconds()})
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Org != out[j].Org {
			return out[i].Org < out[j].Org
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}

// limits returns the quotas of tenant's organisation.
func (s *Server) limits(tenant string) quota.Limits {
	return s.quotas.reg.Limits(security.OrgName(tenant))
}

// quotaRequest measures a request of size bytes whose handler ran for
// took against its organisation's rate quotas (on the reader) and returns
// the throttle it earned.
func (s *Server) quotaRequest(tenant string, l quota.Limits, key int16, size int, at time.Time, took time.Duration) time.Duration {
	r := s.quotas.rates(tenant)
	var d time.Duration
	if l.RequestRate > 0 {
		t := r.requests.Record(at, 1, l.RequestRate)
		s.quotas.note(tenant, throttleRequest, t)
		d = max(d, t)
	}
	if l.RequestPercentage > 0 {
		// Percent of one second per second: 100 × seconds handled.
		t := r.time.Record(at, 100*took.Seconds(), l.RequestPercentage)
		s.quotas.note(tenant, throttleRequest, t)
		d = max(d, t)
	}
	if key == kmsg.Produce.Int16() && l.ProducerByteRate > 0 {
		t := r.produce.Record(at, float64(size), l.ProducerByteRate)
		s.quotas.note(tenant, throttleProduce, t)
		d = max(d, t)
	}
	return d
}

// quotaResponse finishes p's throttle on the writer: a Fetch's record
// bytes are measured against consumer_byte_rate, and the throttle goes
// into the response's ThrottleMillis (if larger than what the handler
// put there). It returns how long to mute the connection after the
// response is written.
func (c *conn) quotaResponse(p *pending, resp kmsg.Response) time.Duration {
	d := p.throttle
	if fr, ok := resp.(*kmsg.FetchResponse); ok {
		if l := c.s.limits(p.tenant); l.ConsumerByteRate > 0 {
			n := 0
			for _, t := range fr.Topics {
				for _, pt := range t.Partitions {
					n += len(pt.RecordBatches)
				}
			}
			t := c.s.quotas.rates(p.tenant).fetch.Record(time.Now(), float64(n), l.ConsumerByteRate)
			c.s.quotas.note(p.tenant, throttleFetch, t)
			d = max(d, t)
		}
	}
	if d <= 0 {
		return 0
	}
	if tr, ok := resp.(kmsg.SetThrottleResponse); ok {
		ms := int32(min(d.Milliseconds()+1, 1<<31-1)) // rounded up: never 0 when throttled
		if cur, _ := resp.(kmsg.ThrottleResponse).Throttle(); cur < ms {
			tr.SetThrottle(ms)
		}
	}
	return d
}

// mute stops the connection's reader from taking another request for d
// (from now), or longer if already muted for longer.
func (c *conn) mute(d time.Duration) {
	if d <= 0 {
		return
	}
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitMuted waits while the connection is muted; false if it closed
// meanwhile. Shutdown ends the wait (the read that follows fails).
func (c *conn) waitMuted() bool {
	for {
		left := time.Until(time.Unix(0, c.mutedUntil.Load()))
		if left <= 0 {
			return true
		}
		t := time.NewTimer(left)
		select {
		case <-t.C:
		case <-c.gone:
			t.Stop()
			return false
		case <-c.s.closing:
			t.Stop()
			return true
		}
	}
}

// quotaMeter is a request being measured: its organisation's limits and
// when its handler started (zero: nothing to measure).
type quotaMeter struct {
	tenant string
	limits quota.Limits
	start  time.Time
}

// startQuota begins measuring a request; it reads the clock only if its
// organisation has a rate quota.
func (s *Server) startQuota(hdr *reqHeader) quotaMeter {
	if s.quotas.reg == nil {
		return quotaMeter{}
	}
	m := quotaMeter{tenant: hdr.tenant()}
	if m.limits = s.limits(m.tenant); m.limits.Rates() {
		m.start = time.Now()
	}
	return m
}

// endQuota measures the request whose handler has returned and returns
// the throttle it earned.
func (s *Server) endQuota(m quotaMeter, key int16, size int) time.Duration {
	if m.start.IsZero() {
		return 0
	}
	return s.quotaRequest(m.tenant, m.limits, key, size, m.start, time.Since(m.start))
}
