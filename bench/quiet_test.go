package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/loadgen"
)

// quietGroups is how many groups BenchmarkQuietGroups creates: 10,000 by
// default, for a quick look; 100,000 and 1,000,000 by the flag.
var quietGroups = flag.Int("quiet.groups", 10000, "BenchmarkQuietGroups: the number of quiet groups to create")

// quietProfiles, if set, is a directory BenchmarkQuietGroups writes the
// node's heap profiles to: after the load (load.heap) and once the lag
// sampler has read every group (sampled.heap), for go tool pprof.
var quietProfiles = flag.String("quiet.profiles", "", "BenchmarkQuietGroups: write heap profiles to this directory")

// quietDir, if set, is the data directory BenchmarkQuietGroups keeps its
// groups in: a run that finds them there (quiet.groups of them, made by
// an earlier run) skips making them and starts at the restart, so that a
// million groups are made once for several looks.
var quietDir = flag.String("quiet.dir", "", "BenchmarkQuietGroups: keep the groups in this data directory and reuse them")

// quietMakeOnly stops BenchmarkQuietGroups once the groups are made, the
// store as the burst of commits left it: copies of it are then loaded
// as a node restarted straight after such a burst would load.
var quietMakeOnly = flag.Bool("quiet.make-only", false, "BenchmarkQuietGroups: make the groups in -quiet.dir and stop")

// quietPartitions is how many offsets every group commits, one per
// partition of the one topic: 4 by default; 10 for the ten
// million offsets of a million groups.
var quietPartitions = 4

func init() {
	flag.IntVar(&quietPartitions, "quiet.offsets", 4, "BenchmarkQuietGroups and BenchmarkQuietGroupsCluster: the offsets each group commits, one per partition")
}

const quietConns = 64

// BenchmarkQuietGroups (Cohort only; run it with -benchtime=1x) measures
// what quiet groups cost a node: -quiet.groups commit-only groups, each
// made by one simple OffsetCommit of the 4 (-quiet.offsets) partitions of one topic (over
// 64 connections), on the real binary (`cohort serve --pprof`, its own
// process, so that its RSS is its own). Then, as an operator sees it:
//
//	heap-B/group, rss-B/group   the node's live heap (after a GC) and RSS
//	                            per group, once every group is committed
//	load-s                      the node restarted on the same data
//	                            directory: until /readyz says it serves
//	heap-load-B/group,          the same after the load
//	rss-load-B/group
//	listgroups-load-s           kadm ListGroups of every group, at once
//	                            after the load (the lag sampler's first
//	                            reading of every group runs beside it)
//	fetch-ms                    OffsetFetch of one group
//
// and once the lag sampler has read every group ten times (its windows
// full: the node as it is most of the time), each the median of three:
//
//	listgroups-s                kadm ListGroups of every group
//	listgroups-wire-s           the same request through kgo alone, which
//	                            sends it to every broker and merges the
//	                            answers through a map of the groups (to
//	                            drop a group two coordinators list)
//	listgroups-broker-s         the same request to the node itself: the
//	                            answer made, on the wire and decoded, as
//	                            a client that needs no merge gets it
//	cli-first-s, cli-s          `cohort groups list`: its first group's
//	                            row, and the whole list
//	api-first-s                 the admin API's groups list, first answer
//	rss-api-B/group             RSS after it
//	metrics-s, metrics-B/group  a scrape of /metrics: time and size
//	rss-metrics-B/group         RSS after it
//
// Per offset figures are the per group ones over -quiet.offsets.
func BenchmarkQuietGroups(b *testing.B) {
	n := *quietGroups
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	dir := b.TempDir()
	made := ""
	if *quietDir != "" {
		dir = *quietDir
		made = filepath.Join(dir, fmt.Sprintf("quiet-groups-%d", n))
		if quietPartitions != 4 {
			made += fmt.Sprintf("-x%d", quietPartitions)
		}
	}
	args := []string{"--pprof", "--lag-sample-interval", "5s"}
	for b.Loop() {
		if _, err := os.Stat(made); made != "" && err == nil {
			b.Logf("reusing the %d groups in %s", n, dir)
		} else {
			makeQuietGroups(ctx, b, dir, args, n)
			if made != "" {
				if err := os.WriteFile(made, nil, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		if *quietMakeOnly {
			b.Skip("the groups are made (-quiet.make-only)")
		}
		testkit.Binary(b) // built before the clock starts (a reused -quiet.dir built nothing yet)
		start := time.Now()
		p := testkit.StartBinary(b, dir, args...)
		waitReady(b, p.HTTPAddr)
		b.ReportMetric(time.Since(start).Seconds(), "load-s")
		heap, rss := liveHeap(b, p.HTTPAddr), rssOf(b, p.Pid())
		saveHeapProfile(b, p.HTTPAddr, "load.heap")
		b.ReportMetric(float64(heap)/float64(n), "heap-load-B/group")
		b.ReportMetric(float64(rss)/float64(n), "rss-load-B/group")
		quietLists(ctx, b, p, n)
		p.Stop(time.Minute)
	}
}

// makeQuietGroups starts the node on dir and makes n quiet groups,
// reporting its heap and RSS once they are made.
func makeQuietGroups(ctx context.Context, b *testing.B, dir string, args []string, n int) {
	p := testkit.StartBinary(b, dir, args...)
	createTopics(ctx, b, p.Addr, int32(quietPartitions), "quiet")
	conns := dialAll(b, p.Addr, quietConns, "bench-quiet")
	const batch = 10000
	for start := 0; start < n; start += batch {
		groups := make([]string, min(batch, n-start))
		for i := range groups {
			groups[i] = fmt.Sprintf("quiet-%07d", start+i)
		}
		if err := commitAll(conns, groups, []string{"quiet"}, int32(quietPartitions), 1); err != nil {
			b.Fatal(err)
		}
	}
	loadgen.CloseAll(conns)
	heap, rss := liveHeap(b, p.HTTPAddr), rssOf(b, p.Pid())
	b.ReportMetric(float64(heap)/float64(n), "heap-B/group")
	b.ReportMetric(float64(rss)/float64(n), "rss-B/group")
	if code := p.Stop(time.Minute); code != 0 {
		b.Fatalf("shutdown: exit %d", code)
	}
}

// quietLists times the lists of a node holding n quiet groups, p, just
// loaded.
func quietLists(ctx context.Context, b *testing.B, p *testkit.Proc, n int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr))
	if err != nil {
		b.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	start := time.Now()
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(start).Seconds(), "listgroups-load-s")
	if len(listed) != n {
		b.Fatalf("ListGroups listed %d groups, want %d", len(listed), n)
	}
	start = time.Now()
	offs, err := adm.FetchOffsets(ctx, "quiet-0000000")
	if err != nil || offs.Error() != nil {
		b.Fatalf("fetch offsets: %v %v", err, offs.Error())
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "fetch-ms")
	if len(offs["quiet"]) != quietPartitions {
		b.Fatalf("fetched %d offsets, want %d", len(offs["quiet"]), quietPartitions)
	}

	// The admin API answers from the lag sampler's first reading:
	// wait for one, then time the lists.
	waitSampled(b, p.HTTPAddr, n)
	b.ReportMetric(float64(liveHeap(b, p.HTTPAddr))/float64(n), "heap-sampled-B/group")
	saveHeapProfile(b, p.HTTPAddr, "sampled.heap")
	// The node as it is most of the time: the lag windows full (their
	// first readings evaluate every group's status, a reading twice as
	// long as the later ones).
	waitWindows(b, p.HTTPAddr, "quiet-0000000", 10)
	// A CPU profile of the node while the lists below are timed.
	profiled := saveCPUProfile(b, p.HTTPAddr, "lists.cpu", 20*time.Second)
	b.ReportMetric(median3(func() float64 {
		start := time.Now()
		listed, err := adm.ListGroups(ctx)
		if err != nil || len(listed) != n {
			b.Fatalf("ListGroups: %d groups, want %d (%v)", len(listed), n, err)
		}
		return time.Since(start).Seconds()
	}), "listgroups-s")
	b.ReportMetric(median3(func() float64 {
		start := time.Now()
		resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
		if err != nil || len(resp.Groups) != n {
			b.Fatalf("ListGroups: %v", err)
		}
		return time.Since(start).Seconds()
	}), "listgroups-wire-s")
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil || len(meta.Brokers) != 1 {
		b.Fatalf("metadata: %v", err)
	}
	node := cl.Broker(int(meta.Brokers[0].NodeID))
	b.ReportMetric(median3(func() float64 {
		start := time.Now()
		resp, err := node.Request(ctx, kmsg.NewPtrListGroupsRequest())
		if err != nil || len(resp.(*kmsg.ListGroupsResponse).Groups) != n {
			b.Fatalf("ListGroups: %v", err)
		}
		return time.Since(start).Seconds()
	}), "listgroups-broker-s")
	cl.Close()
	var firsts []float64
	b.ReportMetric(median3(func() float64 {
		first, total := cliList(b, p.Addr)
		firsts = append(firsts, first)
		return total
	}), "cli-s")
	b.ReportMetric(median3(func() float64 { f := firsts[0]; firsts = firsts[1:]; return f }), "cli-first-s")
	profiled()
	start = time.Now()
	size := httpSize(b, "http://"+p.HTTPAddr+"/api/v1/groups")
	b.ReportMetric(time.Since(start).Seconds(), "api-first-s")
	b.ReportMetric(float64(size)/float64(n), "api-B/group")
	b.ReportMetric(float64(rssOf(b, p.Pid()))/float64(n), "rss-api-B/group")
	b.ReportMetric(metricValue(b, p.HTTPAddr, "cohort_lag_sample_seconds"), "sample-s")
	start = time.Now()
	size = httpSize(b, "http://"+p.HTTPAddr+"/metrics")
	b.ReportMetric(time.Since(start).Seconds(), "metrics-s")
	b.ReportMetric(float64(size)/float64(n), "metrics-B/group")
	b.ReportMetric(float64(rssOf(b, p.Pid()))/float64(n), "rss-metrics-B/group")
}

// saveCPUProfile starts a CPU profile of the node of d (if
// -quiet.profiles is set), and returns a function that waits for it and
// writes it.
func saveCPUProfile(b *testing.B, httpAddr, name string, d time.Duration) func() {
	b.Helper()
	if *quietProfiles == "" {
		return func() {}
	}
	done := make(chan []byte, 1)
	go func() {
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", httpAddr, int(d.Seconds())))
		if err != nil {
			done <- nil
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		done <- body
	}()
	return func() {
		body := <-done
		if err := os.MkdirAll(*quietProfiles, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*quietProfiles, name), body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// median3 is the median of three runs of f.
func median3(f func() float64) float64 {
	v := []float64{f(), f(), f()}
	slices.Sort(v)
	return v[1]
}

// cliList runs `cohort groups list` against addr and returns how long
// its first group's row took to come out, and the whole list, checking
// that it lists every group.
func cliList(b *testing.B, addr string) (first, total float64) {
	b.Helper()
	cmd := exec.Command(testkit.Binary(b), "groups", "list", "--brokers", addr, "--timeout", "5m")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	rows := 0
	for sc.Scan() {
		if rows == 1 {
			first = time.Since(start).Seconds()
		}
		rows++
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("cohort groups list: %v", err)
	}
	total = time.Since(start).Seconds()
	if rows-1 != *quietGroups {
		b.Fatalf("cohort groups list: %d rows, want %d", rows-1, *quietGroups)
	}
	return first, total
}

// liveHeap is the node's live heap after a GC: /debug/pprof/heap?gc=1
// runs one, and its text form ends with the runtime's MemStats.
func liveHeap(b *testing.B, httpAddr string) int64 {
	b.Helper()
	resp, err := http.Get("http://" + httpAddr + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no HeapAlloc in the heap profile (err %v)", sc.Err())
	return 0
}

// saveHeapProfile writes the node's heap profile to name under
// -quiet.profiles, if set.
func saveHeapProfile(b *testing.B, httpAddr, name string) {
	b.Helper()
	if *quietProfiles == "" {
		return
	}
	resp, err := http.Get("http://" + httpAddr + "/debug/pprof/heap?gc=1")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if err := os.MkdirAll(*quietProfiles, 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(*quietProfiles, name))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		b.Fatal(err)
	}
}

// rssOf is a process's resident set size, from /proc.
func rssOf(b *testing.B, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// waitReady waits until the node's /readyz says it serves.
func waitReady(b *testing.B, httpAddr string) {
	b.Helper()
	testkit.Eventually(b, 10*time.Minute, "the node ready", func() bool {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

// waitSampled waits until the lag sampler has read every one of the n
// groups' offsets: cohort_offsets, in /metrics, is its last reading's
// count.
func waitSampled(b *testing.B, httpAddr string, n int) {
	b.Helper()
	testkit.Eventually(b, 10*time.Minute, "the lag sampler's reading of every group", func() bool {
		resp, err := http.Get("http://" + httpAddr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, `cohort_offsets{org="default"} `); ok {
				f, err := strconv.ParseFloat(v, 64)
				return err == nil && int(f) == n*quietPartitions
			}
		}
		return false
	})
}

// waitWindows waits until the lag sampler has read group n times (its
// lag trend has n points), so that its window is full.
func waitWindows(b *testing.B, httpAddr, group string, n int) {
	b.Helper()
	testkit.Eventually(b, 10*time.Minute, fmt.Sprintf("%d lag readings of %s", n, group), func() bool {
		resp, err := http.Get("http://" + httpAddr + "/api/v1/groups/" + group)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var g struct {
			Trend []json.RawMessage `json:"lag_trend"`
		}
		return json.NewDecoder(resp.Body).Decode(&g) == nil && len(g.Trend) >= n
	})
}

// metricValue is the value of the unlabelled series name in the node's
// /metrics.
func metricValue(b *testing.B, httpAddr, name string) float64 {
	b.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(err)
			}
			return f
		}
	}
	b.Fatalf("no %s in /metrics", name)
	return 0
}

// httpSize GETs url and returns the size of its body.
func httpSize(b *testing.B, url string) int64 {
	b.Helper()
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return n
}
