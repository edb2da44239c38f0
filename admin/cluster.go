package admin

// The cluster's view from any node (cluster mode): a node answers for
// the whole cluster by asking every other live node's admin API for
// what that node alone holds (the groups it coordinates, with their lag
// as its sampler last read it) and merging the answers with its own.
// Peers are asked with ?scope=node, which makes any node answer for
// itself alone; each is given APIConfig.PeerTimeout, and an answer that
// lacks a node says which and why (unanswered), rather than waiting for
// it or failing whole.
//
// A peer is asked with the caller's own Authorization header, so that
// it scopes its answer exactly as it would for the caller asking it
// directly. Nothing else is presented: a caller who authenticated by
// client certificate reaches peers as an anonymous caller, never as the
// node.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cohort-dev/cohort/security"
)

// ClusterSource is what a node in cluster mode knows of its cluster.
type ClusterSource interface {
	// Self is this node's id.
	Self() int32
	// Nodes are every node the node knows of, by id, with its state.
	Nodes() []ClusterNode
	// CoordinatorOf is the node that coordinates group of tenant (the
	// registered owner of its shard, as last read); ok false when no
	// registered node owns the shard (it is moving).
	CoordinatorOf(tenant, group string) (node int32, ok bool)
	// Assignment is the epoch of the last assignment of shards to nodes
	// this node read, and how many shards (and other units) it moves:
	// 0 once every shard is where the leader wants it.
	Assignment() (epoch int64, moving int)
}

// Node states in ClusterNode.State (cluster.NodeStates's).
const (
	NodeServing   = "serving"
	NodeDraining  = "draining"
	NodeSuspended = "suspended"
	NodeGone      = "gone"
)

// ClusterNode is a node of GET /api/v1/cluster.
type ClusterNode struct {
	ID int32 `json:"id"`
	// State is serving, draining (handing its shards off to leave),
	// suspended (this node, which cannot renew its lease in etcd and
	// serves nothing until it can) or gone (registered once, and not
	// now: lost or left).
	State string `json:"state"`
	// Self is the node that answered; Leader the node that leads the
	// cluster (decides which node holds which shard).
	Self      bool   `json:"self"`
	Leader    bool   `json:"leader"`
	KafkaAddr string `json:"kafka_addr"`
	// AdminURL is the node's admin API, where it registered one.
	AdminURL string `json:"admin_url,omitempty"`
	Rack     string `json:"rack,omitempty"`
	// Shards are the coordinator shards the last assignment gives it.
	Shards []int `json:"shards"`
}

// alive reports whether the node serves or may (a draining node serves
// until its shards have moved).
func (n ClusterNode) alive() bool { return n.State == NodeServing || n.State == NodeDraining }

// Unanswered is a node whose part an answer lacks, and why.
type Unanswered struct {
	Node     int32  `json:"node"`
	AdminURL string `json:"admin_url,omitempty"`
	Error    string `json:"error"`
}

// nodeScope reports whether r asks for this node's part alone.
func nodeScope(r *http.Request) bool { return r.URL.Query().Get("scope") == "node" }

// clusterWide reports whether r is answered for the whole cluster.
func (a *API) clusterWide(r *http.Request) bool { return a.cfg.Cluster != nil && !nodeScope(r) }

// coordinates reports whether this node exports group of tenant: on a
// single node every group it holds; in a cluster those whose shard it
// owns as last read, so that a shard that moved since the last sample
// is exported by its new owner alone.
func (a *API) coordinates(tenant, group string) bool {
	if a.cfg.Cluster == nil {
		return true
	}
	n, ok := a.cfg.Cluster.CoordinatorOf(tenant, group)
	return ok && n == a.cfg.Cluster.Self()
}

// peerAnswer is one peer's answer to a fan-out.
type peerAnswer struct {
	node ClusterNode
	body []byte
	err  error
}

// askPeers asks every other live node for path with r's query and
// ?scope=node, at most 8 at a time, each within PeerTimeout. It returns
// the answers and the nodes that did not give one.
func (a *API) askPeers(r *http.Request, path string) ([]peerAnswer, []Unanswered) {
	var todo []ClusterNode
	var missing []Unanswered
	for _, n := range a.cfg.Cluster.Nodes() {
		switch {
		case n.Self || !n.alive():
		case n.AdminURL == "":
			missing = append(missing, Unanswered{Node: n.ID, Error: "registered no admin address (its admin listener is off)"})
		default:
			todo = append(todo, n)
		}
	}
	answers := make([]peerAnswer, len(todo))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, n := range todo {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			body, status, err := a.peerGet(r, n.AdminURL, path)
			if err == nil && status != http.StatusOK {
				err = peerStatusError(status, body)
			}
			answers[i] = peerAnswer{node: n, body: body, err: err}
		}()
	}
	wg.Wait()
	var out []peerAnswer
	for _, pa := range answers {
		if pa.err != nil {
			missing = append(missing, Unanswered{Node: pa.node.ID, AdminURL: pa.node.AdminURL, Error: pa.err.Error()})
			continue
		}
		out = append(out, pa)
	}
	slices.SortFunc(missing, func(a, b Unanswered) int { return cmp.Compare(a.Node, b.Node) })
	return out, missing
}

// peerGet GETs base+path with r's query and ?scope=node, and the
// caller's Authorization header, within PeerTimeout.
func (a *API) peerGet(r *http.Request, base, path string) (body []byte, status int, err error) {
	q := r.URL.Query()
	q.Set("scope", "node")
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.PeerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, 0, err
	}
	if h := r.Header.Get("Authorization"); h != "" {
		req.Header.Set("Authorization", h)
	}
	resp, err := a.cfg.PeerClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is said beside it
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %v", a.cfg.PeerTimeout)
		}
		return nil, 0, err
	}
	defer resp.Body.Close()
	// A group's detail is the largest answer; 64 MiB bounds a peer gone
	// wrong.
	body, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return body, resp.StatusCode, err
}

// peerStatusError is a peer's answer other than 200, with its error.
func peerStatusError(status int, body []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return fmt.Errorf("HTTP %d: %s", status, e.Error)
	}
	return fmt.Errorf("HTTP %d", status)
}

// clusterGroups is the whole cluster's page for q: this node's page
// and each other live node's for the same query, merged in q's order,
// each group once (from its coordinator as last read, if two nodes list
// it while its shard moves), cut to q's limit. Each node's page is
// sorted by the same key and starts after the same cursor, so the merge's
// first limit groups are the cluster's; more follow if any node had more
// or the merge was cut.
func (a *API) clusterGroups(r *http.Request, q listQuery, own listPage) (listPage, []Unanswered) {
	answers, missing := a.askPeers(r, "/api/v1/groups")
	all := slices.Clone(own.groups)
	p := listPage{total: own.total, more: own.more, totals: own.totals}
	for _, pa := range answers {
		var resp struct {
			Groups     []GroupSummary `json:"groups"`
			Total      int            `json:"total"`
			NextCursor string         `json:"next_cursor"`
			Totals     ListTotals     `json:"totals"`
		}
		if err := json.Unmarshal(pa.body, &resp); err != nil {
			missing = append(missing, Unanswered{Node: pa.node.ID, AdminURL: pa.node.AdminURL, Error: "answer not understood: " + err.Error()})
			continue
		}
		p.total += resp.Total
		p.totals.add(resp.Totals)
		p.more = p.more || resp.NextCursor != ""
		for _, g := range resp.Groups {
			if g.Coordinator == nil {
				id := pa.node.ID
				g.Coordinator = &id
			}
			all = append(all, g)
		}
	}
	type key struct{ tenant, group string }
	idx := map[key]int{}
	out := all[:0]
	for _, g := range all {
		k := key{g.Tenant, g.Group}
		i, dup := idx[k]
		if !dup {
			idx[k] = len(out)
			out = append(out, g)
			continue
		}
		p.total--
		if n, ok := a.cfg.Cluster.CoordinatorOf(g.Tenant, g.Group); ok && g.Coordinator != nil && *g.Coordinator == n {
			out[i] = g
		}
	}
	slices.SortFunc(out, func(x, y GroupSummary) int {
		return keyOf(q.sort, x.Tenant, x.Group, x.TotalLag, x.Status).compare(keyOf(q.sort, y.Tenant, y.Group, y.TotalLag, y.Status))
	})
	if len(out) > q.limit {
		out, p.more = out[:q.limit], true
	}
	p.groups = out
	return p, missing
}

// proxyGroup answers a request about group of tenant from the node that
// coordinates it, when that is another node; it reports whether it did
// (false: answer here).
func (a *API) proxyGroup(w http.ResponseWriter, r *http.Request, tenant, group string) bool {
	if !a.clusterWide(r) {
		return false
	}
	id, ok := a.cfg.Cluster.CoordinatorOf(tenant, group)
	if !ok {
		writeError(w, http.StatusServiceUnavailable, "group "+strconv.Quote(group)+" of organisation "+security.OrgName(tenant)+" has no coordinator now: its shard is moving to another node (try again shortly)")
		return true
	}
	if id == a.cfg.Cluster.Self() {
		return false
	}
	var n ClusterNode
	for _, c := range a.cfg.Cluster.Nodes() {
		if c.ID == id {
			n = c
		}
	}
	if n.AdminURL == "" {
		writeError(w, http.StatusBadGateway, fmt.Sprintf("group %q is coordinated by node %d, which registered no admin address (its admin listener is off)", group, id))
		return true
	}
	body, status, err := a.peerGet(r, n.AdminURL, r.URL.EscapedPath())
	if err != nil {
		writeError(w, http.StatusBadGateway, fmt.Sprintf("group %q is coordinated by node %d (%s), which did not answer: %v", group, id, n.AdminURL, err))
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Cohort-Answered-By", strconv.Itoa(int(id)))
	w.WriteHeader(status)
	w.Write(body)
	return true
}

// clusterNodes is GET /api/v1/cluster.
func (a *API) clusterNodes(w http.ResponseWriter, _ *http.Request) {
	if a.cfg.Cluster == nil {
		n := a.cfg.Source.Node()
		writeJSON(w, http.StatusOK, map[string]any{"cluster": false, "nodes": []ClusterNode{{
			ID: 0, State: NodeServing, Self: true, Leader: true, KafkaAddr: n.KafkaAddr, Shards: n.ShardsHeld,
		}}})
		return
	}
	nodes := a.cfg.Cluster.Nodes()
	epoch, moving := a.cfg.Cluster.Assignment()
	resp := map[string]any{"cluster": true, "self": a.cfg.Cluster.Self(), "nodes": nodes, "epoch": epoch, "moving": moving}
	for _, n := range nodes {
		if n.Leader {
			resp["leader"] = n.ID
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// markLeaders sets whether each partition's leader serves (cluster
// mode).
func (a *API) markLeaders(ts []TopicInfo) {
	if a.cfg.Cluster == nil {
		return
	}
	alive := map[int32]bool{}
	for _, n := range a.cfg.Cluster.Nodes() {
		alive[n.ID] = n.alive()
	}
	for _, t := range ts {
		for i := range t.Partitions {
			p := &t.Partitions[i]
			v := p.Leader >= 0 && alive[p.Leader]
			p.LeaderAlive = &v
		}
	}
}

// peerTimeout is PeerTimeout's default: long enough for a loaded peer
// to list its groups, short enough that a page polling every 2 s does
// not pile requests up behind a dead one.
const peerTimeout = 3 * time.Second
