package groups

import (
	"slices"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// API is one group API as Cohort serves it, registered by the file named
// for its Kafka API key (08_offset_commit.go … 69_consumer_group_describe.go,
// franz-go kfake's layout), whose comment holds the version notes. The
// registration says everything about the API in one place: the versions
// served, the groups a request names (so the coordinator can route it to
// their shards), how to split a request that names groups of several
// shards and merge the parts' answers, the response that carries one
// error everywhere (what a shard that cannot serve sends), and the
// handler. The wire server advertises and dispatches group APIs from this
// table, the coordinator routes with it and the shard serves with it, so
// adding a group API touches its own file and its tests.
type API struct {
	Key                    kmsg.Key
	MinVersion, MaxVersion int16
	// GroupACL is the operation a principal needs on each group the
	// request names (Kafka's KafkaApis: READ to join or commit, DESCRIBE
	// to read, DELETE to delete); with an authorizer, the wire server
	// answers GROUP_AUTHORIZATION_FAILED for the groups it refuses before
	// the coordinator sees them.
	GroupACL kmsg.ACLOperation
	// Groups returns the groups a request names, in request order. Nil:
	// the request is for every shard (ListGroups).
	Groups func(req kmsg.Request) []string
	// Split returns the part of a request that names only the groups at
	// idx (indexes into Groups' answer). Nil: a request names one group.
	Split func(req kmsg.Request, idx []int) kmsg.Request
	// Merge builds the answer to req from the answers to its parts, in
	// shard order: parts[k] answered the groups at idx[k] (nil for every
	// part of a request for every shard).
	Merge func(req kmsg.Request, idx [][]int, parts []kmsg.Response) kmsg.Response
	// Error answers req with code everywhere a response of its kind
	// carries an error.
	Error func(req kmsg.Request, code int16) kmsg.Response

	handle func(s *Shard, now time.Time, req machine.Request)
}

var apis = map[kmsg.Key]*API{}

// APIs returns every group API, by key.
func APIs() []*API {
	out := make([]*API, 0, len(apis))
	for _, a := range apis {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *API) int { return int(a.Key) - int(b.Key) })
	return out
}

// Lookup returns the group API with this key.
func Lookup(key int16) (*API, bool) {
	a, ok := apis[kmsg.Key(key)]
	return a, ok
}

// register adds an API; handle serves its typed request, and fill sets
// code everywhere in a response of its kind (whose version is set).
func register[Req kmsg.Request, Resp kmsg.Response](a *API, handle func(s *Shard, now time.Time, req machine.Request, r Req), fill func(r Req, resp Resp, code int16)) {
	if req := kmsg.RequestForKey(int16(a.Key)); req == nil || req.MaxVersion() < a.MaxVersion {
		panic("groups: kmsg cannot encode " + a.Key.Name() + " at the registered version")
	}
	if a.GroupACL == kmsg.ACLOperationUnknown {
		panic("groups: " + a.Key.Name() + " has no authorization rule (GroupACL)")
	}
	a.handle = func(s *Shard, now time.Time, req machine.Request) { handle(s, now, req, req.Msg.(Req)) }
	a.Error = func(r kmsg.Request, code int16) kmsg.Response {
		resp := r.ResponseKind().(Resp)
		resp.SetVersion(r.GetVersion())
		fill(r.(Req), resp, code)
		return resp
	}
	apis[a.Key] = a
}

// oneGroup routes a request that names one group.
func oneGroup[Req kmsg.Request](group func(Req) string) func(kmsg.Request) []string {
	return func(r kmsg.Request) []string { return []string{group(r.(Req))} }
}

// manyGroups routes a request that names several groups: names lists
// them, part keeps those at idx, results reads a part's per-group answers
// and build makes the whole answer from them, in request order.
func manyGroups[Req kmsg.Request, Resp kmsg.Response, E any](a *API, names func(Req) []string, part func(r Req, idx []int) Req, results func(Resp) []E, build func(r Req, resp Resp, all []E)) {
	a.Groups = func(r kmsg.Request) []string { return names(r.(Req)) }
	a.Split = func(r kmsg.Request, idx []int) kmsg.Request { return part(r.(Req), idx) }
	a.Merge = func(r kmsg.Request, idx [][]int, parts []kmsg.Response) kmsg.Response {
		req := r.(Req)
		all := make([]E, len(names(req)))
		for k, p := range parts {
			for j, e := range results(p.(Resp)) {
				all[idx[k][j]] = e
			}
		}
		resp := req.ResponseKind().(Resp)
		resp.SetVersion(req.GetVersion())
		build(req, resp, all)
		return resp
	}
}

// pick returns the elements of all at idx.
func pick[T any](all []T, idx []int) []T {
	out := make([]T, len(idx))
	for j, i := range idx {
		out[j] = all[i]
	}
	return out
}
