package e2e

// The web page served by a real node, in headless Chromium, while a
// franz-go group of 3 consumes with a lag: the page shows the group, its
// members and its lag, and a rebalance appears in its timeline without a
// reload; configs set through IncrementalAlterConfigs while the page is
// open show on the group's and the topic's views.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/e2e/webtest"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
)

func TestWebPage(t *testing.T) {
	longTest(t)
	for _, proto := range []string{"classic", "consumer"} {
		t.Run(proto, func(t *testing.T) { testWebPage(t, proto) })
	}
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
