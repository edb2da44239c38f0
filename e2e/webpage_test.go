package e2e

// The web page served by a real node, in headless Chromium, while a
// franz-go group of 3 consumes with a lag: the page shows the group, its
// members and its lag, and a rebalance appears in its timeline without a
// reload; configs set through IncrementalAlterConfigs while the page is
// open show on the group's and the topic's views. A share group (KIP-932)
// whose franz-go share consumer holds records shows with its records in
// flight, acquired and archived, and its share partitions.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/e2e/webtest"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
)

func TestWebPage(t *testing.T) {
	longTest(t)
	for _, proto := range []string{"classic", "consumer"} {
		t.Run(proto, func(t *testing.T) { testWebPage(t, proto) })
	}
	t.Run("share", testShareWebPage)
}

// testShareWebPage: a share group whose consumer holds records
// (testkit.ShareInFlight) on the overview, with its records in flight,
// and on its page: the facts' counts, the member and its epoch, the
// assignment, each share partition's start offset, lag and records in
// flight by state, and the rebalance its member's join made.
func testShareWebPage(t *testing.T) {
	const topic, group, client = "web-share", "web-share-group", "web-share-consumer"
	// The records held stay acquired for the whole test.
	n := testkit.StartNode(t, node.Config{HTTPListen: "127.0.0.1:0", LagSampleInterval: 200 * time.Millisecond,
		ShareState: sharestate.Config{Limits: sharestate.Limits{LockDuration: 10 * time.Minute}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	extCreateTopic(t, n.KafkaAddr(), topic, 2)
	testkit.ShareInFlight(ctx, t, n.KafkaAddr(), group, topic, client)

	b := webtest.Start(t)
	b.Open("http://" + n.HTTPAddr() + "/")
	// The overview reads the lag sampler's last reading: wait for the
	// one after the released record was taken again.
	row := fmt.Sprintf(`document.querySelector('tr[data-group=%q]')`, group)
	b.Wait("the share group's row with its lag and records in flight", fmt.Sprintf(
		`%[1]s && %[1]s.querySelector('[data-testid=members]').textContent === '1' && +%[1]s.querySelector('[data-testid=total-lag]').dataset.value === 4 &&
		%[1]s.querySelector('[data-testid=in-flight]') && %[1]s.querySelector('[data-testid=in-flight]').textContent === '6 (4 acquired, 1 archived)'`, row))
	if got := webtest.Eval[string](b, row+`.querySelector('.badge').textContent`); got != "share" {
		t.Errorf("group type %q, want share", got)
	}
	if got := webtest.Eval[string](b, row+`.querySelector('[data-testid=state]').textContent`); got != "Stable" {
		t.Errorf("group state %q, want Stable", got)
	}
	b.Screenshot("share-overview")

	b.Click(fmt.Sprintf(`tr[data-group=%q] a`, group))
	b.Wait("the share partitions", `document.querySelectorAll('[data-testid=share-partitions] [data-testid=partition]').length === 2`)
	facts := func(id string) string {
		return webtest.Eval[string](b, fmt.Sprintf(`document.querySelector('dl.facts [data-testid=%s]').textContent`, id))
	}
	if in, acq, arch, lag := facts("in-flight"), facts("acquired"), facts("archived"), facts("total-lag"); in != "6" || acq != "4" || arch != "1" || lag != "4" {
		t.Errorf("facts: in flight %q, acquired %q, archived %q, total lag %q; want 6, 4, 1, 4", in, acq, arch, lag)
	}
	// Each share partition: start offset, lag, then the records in
	// flight by state.
	cells := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=share-partitions] [data-testid=partition]')].map(r =>
		['start-offset', 'lag', 'in-flight', 'available', 'acquired', 'acknowledged', 'archived', 'redelivered'].map(id => r.querySelector('[data-testid=' + id + ']').textContent).join(' '))`)
	if want := []string{"10 4 6 0 4 1 1 1", "4 0 0 0 0 0 0 0"}; !slices.Equal(cells, want) {
		t.Errorf("share partitions (start, lag, in flight, available, acquired, acknowledged, archived, redelivered) %q, want %q", cells, want)
	}
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=share-partitions] [data-testid=partition] td:nth-child(3)')].map(c => c.textContent)`); !slices.Equal(got, []string{"M1", "M1"}) {
		t.Errorf("share partitions' members %q, want M1 on both", got)
	}
	// Its member, with its epoch, assigned both partitions.
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=member] td')].map(c => c.textContent)`); len(got) < 8 ||
		got[0] != "M1" || got[3] != client || got[5] == "—" || got[6] != "2" || got[7] != topic+" [0–1]" {
		t.Errorf("member row %q, want M1, client %s, an epoch, 2 partitions", got, client)
	}
	if got := webtest.Eval[int](b, `document.querySelectorAll('[data-testid=assignment-grid] td.owned').length`); got != 2 {
		t.Errorf("assignment grid: %d assigned cells, want 2", got)
	}
	b.Wait("the member's join in the timeline", `[...document.querySelectorAll('[data-testid=rebalance]')].some(r => r.dataset.cause === 'member-joined')`)
	if got := webtest.Eval[string](b, `document.querySelector('[data-testid=rebalance]').textContent`); !strings.Contains(got, "Epoch") {
		t.Errorf("a share group's rebalance reads %q, want its epoch", got)
	}
	b.Screenshot("share-group")
	b.NoProblems()
}

func testWebPage(t *testing.T, proto string) {
	const (
		topic     = "web-events"
		group     = "web-group"
		parts     = 6
		perPart   = 50
		committed = 10 // per partition, before the consumers join
	)
	cfg := node.Config{HTTPListen: "127.0.0.1:0", LagSampleInterval: 200 * time.Millisecond}
	cfg.Groups.InitialRebalanceDelay = 200 * time.Millisecond
	n := testkit.StartNode(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Records, and the group's offsets committed behind them.
	extCreateTopic(t, n.KafkaAddr(), topic, parts)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for p := range int32(parts) {
		for i := range perPart {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d", i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	for p := range int32(parts) {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: committed})
	}
	resp, err := kadm.NewClient(cl).CommitOffsets(ctx, group, offs)
	if err == nil {
		err = resp.Error()
	}
	cl.Close()
	if err != nil {
		t.Fatalf("commit: %v", err)
	}

	// Three members that fetch but never commit: the lag stays at
	// parts × (perPart − committed).
	member := func(i int) *kgo.Client {
		opts := []kgo.Opt{kgo.SeedBrokers(n.KafkaAddr()), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ClientID(fmt.Sprintf("web-consumer-%d", i)), kgo.DisableAutoCommit(), kgo.FetchMaxWait(100 * time.Millisecond)}
		if proto == "consumer" { // KIP-848
			opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer())
		}
		return pollingMember(ctx, t, opts...)
	}
	for i := 1; i <= 3; i++ {
		defer member(i).Close()
	}
	const lag = parts * (perPart - committed)

	b := webtest.Start(t)
	b.Open("http://" + n.HTTPAddr() + "/")
	row := fmt.Sprintf(`document.querySelector('tr[data-group=%q]')`, group)
	b.Wait("the group's row with 3 members and its lag", fmt.Sprintf(
		`%[1]s && %[1]s.querySelector('[data-testid=members]').textContent === '3' && +%[1]s.querySelector('[data-testid=total-lag]').dataset.value === %[2]d`,
		row, lag))
	if got := webtest.Eval[string](b, `document.getElementById('node').textContent`); got == "" {
		t.Errorf("no node summary in the header")
	}
	if got := webtest.Eval[string](b, row+`.querySelector('.badge').textContent`); got != proto {
		t.Errorf("group type %q, want %s", got, proto)
	}
	b.Screenshot("overview")

	b.Click(fmt.Sprintf(`tr[data-group=%q] a`, group))
	b.Wait("3 members, all partitions owned", `document.querySelectorAll('[data-testid=member]').length === 3 &&
		document.querySelectorAll('[data-testid=assignment-grid] td.owned').length === 6`)
	if got := webtest.Eval[[]int](b, `[...document.querySelectorAll('[data-testid=lag]')].map(c => +c.dataset.value)`); len(got) != parts {
		t.Errorf("partition lags %v, want %d", got, parts)
	} else {
		for p, l := range got {
			if l != perPart-committed {
				t.Errorf("partition %d lag %d, want %d", p, l, perPart-committed)
			}
		}
	}
	clients := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=member] td:nth-child(4)')].map(c => c.textContent).sort()`)
	if fmt.Sprint(clients) != "[web-consumer-1 web-consumer-2 web-consumer-3]" {
		t.Errorf("member client ids %q", clients)
	}
	// The group's configs: the node's flag, then the group's own value,
	// set while the page is open, without a reload.
	sessionRow := `document.querySelector('[data-testid=config][data-config="consumer.session.timeout.ms"]')`
	b.Wait("the group's session timeout, the node's", sessionRow+` && `+sessionRow+`.dataset.source === 'node'`)
	testkit.SetConfig(t, n.KafkaAddr(), kmsg.ConfigResourceTypeGroupConfig, group, "consumer.session.timeout.ms", "50000")
	b.Wait("the group's own session timeout", sessionRow+`.dataset.source === 'group' && `+sessionRow+`.classList.contains('explicit') && `+
		sessionRow+`.querySelector('[data-testid=config-value]').textContent === '50000'`)
	// The rebalances that formed the group, then one more: a fourth
	// member joins, and the page shows it without a reload.
	// Waiting for the group to settle first: a member joining a
	// rebalance still under way restarts it, and makes no new entry.
	b.Wait("the forming rebalances in the timeline, completed", `document.querySelectorAll('[data-testid=rebalance]').length >= 1 &&
		!document.querySelector('[data-testid=rebalance].in-progress')`)
	before := webtest.Eval[int](b, `document.querySelectorAll('[data-testid=rebalance]').length`)
	defer member(4).Close()
	b.Wait("a new rebalance and 4 members", fmt.Sprintf(`document.querySelectorAll('[data-testid=rebalance]').length > %d &&
		document.querySelectorAll('[data-testid=member]').length === 4`, before))
	// The timeline lists the newest first. A cooperative group follows
	// the joiner's rebalance with a second one when the members that
	// gave partitions up rejoin (cause member-rejoined), so the joiner's
	// is one of the new entries, not necessarily the newest.
	causes := webtest.Eval[[]string](b, fmt.Sprintf(`[...document.querySelectorAll('[data-testid=rebalance]')].slice(0, document.querySelectorAll('[data-testid=rebalance]').length - %d).map(r => r.dataset.cause)`, before))
	if !slices.Contains(causes, "member-joined") {
		t.Errorf("causes of the new rebalances %q, want one member-joined", causes)
	}
	b.Screenshot("group")

	// The topic's configs: one set while the page is open, highlighted
	// and marked enforced.
	testkit.SetConfig(t, n.KafkaAddr(), kmsg.ConfigResourceTypeTopic, topic, "max.message.bytes", "2000000")
	b.Click(`[data-nav=topics]`)
	maxRow := fmt.Sprintf(`document.querySelector('[data-topic=%q] [data-testid=config][data-config="max.message.bytes"]')`, topic)
	b.Wait("the topic's max.message.bytes, set", maxRow+` && `+maxRow+`.dataset.source === 'topic' && `+maxRow+`.classList.contains('explicit') && `+
		maxRow+`.querySelector('[data-testid=config-value]').textContent === '2000000' && `+maxRow+`.querySelector('[data-testid=enforced]').dataset.value === 'true'`)
	if got := webtest.Eval[int](b, fmt.Sprintf(`document.querySelectorAll('[data-topic=%q] [data-testid=config][data-source=default]').length`, topic)); got < 5 {
		t.Errorf("%d default configs shown, want every other topic config", got)
	}
	b.Click(fmt.Sprintf(`[data-topic=%q] [data-testid=topic-configs] summary`, topic))
	b.Screenshot("topics")
	b.NoProblems()
}
