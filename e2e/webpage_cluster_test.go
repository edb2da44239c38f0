package e2e

// The web page of one node of a three-node cluster shows the whole
// cluster, in headless Chromium: every group with the node that
// coordinates it, every node serving, a group another node coordinates
// opened from this node's page. Then one node dies (SIGKILL): the page
// shows it gone or not answering, its groups again under their new
// coordinators with the offsets committed before, and the partitions it
// led without a live leader.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cohort-dev/cohort/e2e/webtest"
)

func TestWebPageCluster(t *testing.T) {
	const (
		topic = "web-cluster"
		parts = 3
	)
	start := time.Now()
	c := startCluster(t, 1, 3, "--lag-sample-interval", "200ms")
	adm := c.admin()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Partition p is led by node p+1; 10 records in each.
	c.createTopicOn(topic, parts, 1, 2, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range int32(parts) {
		for i := range 10 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d", i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// A group coordinated by each node, committed through that node (kadm
	// sends OffsetCommit to the coordinator): group of node n commits
	// n+p at partition p, so that each group's offsets are its own.
	groups := map[int32]string{}
	committed := func(id int32) []string {
		var want []string
		for p := range int32(parts) {
			want = append(want, fmt.Sprint(id+p))
		}
		return want
	}
	for id := int32(1); id <= 3; id++ {
		g := c.groupOn(adm, fmt.Sprintf("web-n%d", id), id)
		groups[id] = g
		offs := kadm.Offsets{}
		for p := range int32(parts) {
			offs.Add(kadm.Offset{Topic: topic, Partition: p, At: int64(id + p)})
		}
		if resp, err := adm.CommitOffsets(ctx, g, offs); err != nil || resp.Error() != nil {
			t.Fatalf("commit %s: %v %v", g, err, resp.Error())
		}
	}
	t.Logf("%v: cluster up, groups %v", time.Since(start).Round(time.Millisecond), groups)

	b := webtest.Start(t)
	page := "http://" + c.node(1).HTTPAddr + "/"
	b.Open(page)

	// rowCoordinator is the coordinator cell of group g's row, '' if the
	// row is not there.
	rowCoordinator := func(g string) string {
		return fmt.Sprintf(`(document.querySelector('tr[data-group=%q] [data-testid=coordinator]') || {}).textContent`, g)
	}
	nodeState := func(id int32) string {
		return fmt.Sprintf(`(document.querySelector('[data-testid=cluster-node][data-node="%d"]') || {dataset: {}}).dataset.state`, id)
	}
	var every []string
	for id := int32(1); id <= 3; id++ {
		every = append(every, fmt.Sprintf(`%s === '%d'`, rowCoordinator(groups[id]), id))
	}
	b.Wait("every group of the cluster with its coordinator", strings.Join(every, " && "))
	b.Wait("3 nodes serving", fmt.Sprintf(`document.querySelectorAll('[data-testid=cluster-node]').length === 3 && %s === 'serving' && %s === 'serving' && %s === 'serving'`,
		nodeState(1), nodeState(2), nodeState(3)))
	if got := webtest.Eval[string](b, `document.querySelector('[data-testid=cluster-node] [data-testid=self]') ? document.querySelector('[data-testid=cluster-node]').dataset.node : ''`); got != "1" {
		t.Errorf("the page names node %q as this node, want 1", got)
	}
	if got := webtest.Eval[int](b, `document.querySelectorAll('[data-testid=cluster-node] [data-testid=leader]').length`); got != 1 {
		t.Errorf("%d nodes marked leader, want 1", got)
	}
	if !webtest.Eval[bool](b, `document.querySelector('[data-testid=partial]').hidden`) {
		t.Errorf("the list says it is partial with every node up: %q", webtest.Eval[string](b, `document.querySelector('[data-testid=partial]').textContent`))
	}
	b.Screenshot("cluster-overview")

	// A group page's committed offsets, by partition, and the node the
	// page says coordinates the group.
	committedCells := `[...document.querySelectorAll('[data-testid=partitions] [data-testid=partition]')].map(r => r.querySelector('td:nth-child(4)').textContent).join(' ')`
	coordinatorFact := `(document.querySelector('dl.facts [data-testid=coordinator]') || {}).textContent`

	// A group node 2 coordinates, opened from node 1's page by its link.
	b.Click(fmt.Sprintf(`tr[data-group=%q] a`, groups[2]))
	b.Wait("node 2's group with its committed offsets", fmt.Sprintf(`%s === %q && %s === 'node 2'`,
		committedCells, strings.Join(committed(2), " "), coordinatorFact))
	b.Screenshot("cluster-group")

	// Node 3 coordinates groups[3] and leads partition 2: kill it.
	b.Open(page)
	b.Wait("the overview again", rowCoordinator(groups[3])+` === '3'`)
	killed := time.Now()
	c.node(3).Kill()

	// Node 3 shows gone (its lease expired) or, before that, as a node
	// whose groups the list lacks; either way, in the end its group is
	// listed under a node that lives.
	b.Wait("node 3 gone or not answering", fmt.Sprintf(`%s === 'gone' || !!document.querySelector('[data-testid=partial] [data-testid=unanswered][data-node="3"]')`, nodeState(3)))
	t.Logf("node 3 shown down %v after the kill", time.Since(killed).Round(time.Millisecond))
	b.Wait("node 3 gone, its group under a new coordinator", fmt.Sprintf(`%s === 'gone' && ['1', '2'].includes(%s) && %s === '1' && %s === '2' &&
		%s === 'serving' && %s === 'serving'`,
		nodeState(3), rowCoordinator(groups[3]), rowCoordinator(groups[1]), rowCoordinator(groups[2]), nodeState(1), nodeState(2)))
	t.Logf("node 3's group moved %v after the kill", time.Since(killed).Round(time.Millisecond))
	moved := webtest.Eval[string](b, rowCoordinator(groups[3]))
	if !webtest.Eval[bool](b, `document.querySelector('[data-testid=cluster-node][data-node="3"]').classList.contains('node-down')`) {
		t.Errorf("gone node 3 is not marked")
	}
	b.Screenshot("cluster-overview-killed")

	// The moved group's offsets, as committed before the kill, from its
	// new coordinator.
	b.Click(fmt.Sprintf(`tr[data-group=%q] a`, groups[3]))
	b.Wait("the moved group with its committed offsets", fmt.Sprintf(`%s === %q && %s === 'node %s'`,
		committedCells, strings.Join(committed(3), " "), coordinatorFact, moved))
	b.Screenshot("cluster-group-moved")

	// Node 3's partition has no live leader; the others' have.
	b.Click(`[data-nav=topics]`)
	leaders := fmt.Sprintf(`[...document.querySelectorAll('[data-topic=%q] [data-testid=topic-partition]')].map(r => r.querySelector('[data-testid=leader]').textContent + (r.querySelector('.leader-down') ? '!' : ''))`, topic)
	b.Wait("node 3's partition marked", leaders+`.join(' ') === '1 2 3 (gone)!'`)
	b.Screenshot("cluster-topics")
	if got := webtest.Eval[[]string](b, leaders); !slices.Equal(got, []string{"1", "2", "3 (gone)!"}) {
		t.Errorf("leaders %q", got)
	}
	b.NoProblems()
	t.Logf("%v in all", time.Since(start).Round(time.Millisecond))
}
