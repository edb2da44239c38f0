package main

// What only a Cohort node knows about a group, read from its admin JSON
// API when --admin-url names one: the stable cgp_ id and RRL, and the lag
// status and time to clear (admin/lagstatus.go). The node answers for the
// caller's organisation (--admin-user's), so the RRL is
// <org>/consumer-groups/<slug> with that organisation. No Kafka response carries
// them, so against any other broker these columns are simply absent. A
// share group's records in flight (KIP-932) come from it too; its start
// offsets and lag are the broker's (DescribeShareGroupOffsets), which a
// Cohort node answers.

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// cohortGroup is the part of GET /api/v1/groups/{group} the CLI shows.
type cohortGroup struct {
	CgpID              string   `json:"cgp_id"`
	RRL                string   `json:"rrl"`
	Status             string   `json:"status"`
	TimeToClearSeconds *float64 `json:"time_to_clear_seconds"`
	Partitions         []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Status    string `json:"status"`
		// Share is a share group's share-partition state.
		Share *shareCounts `json:"share"`
	} `json:"partitions"`
}

// admin is the client of e.adminURL.
func (e *groupsEnv) admin() adminHTTP {
	return newAdminHTTP(e.adminURL, e.adminToken, e.adminUser, e.adminPassword)
}

// orgQuery is the query naming --org, "" without it.
func (e *groupsEnv) orgQuery() string {
	if e.adminOrg == "" {
		return ""
	}
	return "?org=" + url.QueryEscape(e.adminOrg)
}

// addCohortInfo fills what the node at e.adminURL knows of each group
// (in a cluster, any node answers for every group, asking its
// coordinator). A group it does not have (another organisation's)
// keeps its fields empty, as does one whose coordinator did not answer
// (with a warning); a node that cannot be read is an error.
func addCohortInfo(e *groupsEnv, gs []describedGroup) error {
	if e.adminURL == "" {
		return nil
	}
	ctx, cancel := e.ctx()
	defer cancel()
	for i := range gs {
		g := &gs[i]
		var cg cohortGroup
		err := e.admin().do(ctx, http.MethodGet, "/api/v1/groups/"+url.PathEscape(g.Group)+e.orgQuery(), nil, &cg)
		var ae *adminError
		if errors.As(err, &ae) && ae.status == http.StatusNotFound {
			continue
		}
		if errors.As(err, &ae) && (ae.status == http.StatusBadGateway || ae.status == http.StatusServiceUnavailable) {
			// In a cluster: the node that coordinates the group did not
			// answer the one asked. The rest is still worth showing.
			e.warn("--admin-url: group %s: %v", g.Group, err)
			continue
		}
		if err != nil {
			return fmt.Errorf("--admin-url: %w", err)
		}
		if cg.CgpID == "" {
			continue
		}
		g.CgpID, g.RRL, g.Status, g.TimeToClearSeconds = cg.CgpID, cg.RRL, lagStatusCell(cg.Status), cg.TimeToClearSeconds
		for _, cp := range cg.Partitions {
			for j := range g.Partitions {
				p := &g.Partitions[j]
				if p.Topic != cp.Topic || p.Partition != cp.Partition {
					continue
				}
				p.Status = lagStatusCell(cp.Status)
				if g.Type == "share" {
					p.Share = cp.Share
				}
			}
		}
	}
	return nil
}

// addCohortIDs fills the cgp_ id and RRL of each listed group from the
// node's groups list (in a cluster, the whole cluster's, with a warning
// for each node that did not answer; the caller's organisation's, or --org's; for an
// operator naming none, every organisation's, of which a name's in the
// default organisation is taken).
func addCohortIDs(e *groupsEnv, l *listing) error {
	if e.adminURL == "" {
		return nil
	}
	ctx, cancel := e.ctx()
	defer cancel()
	// The list in pages, as the API serves it: a million groups are a
	// hundred requests of bounded size, not one answer of a gigabyte.
	type listed struct {
		Org   string
		CgpID string
		RRL   string
	}
	byName := map[string][]listed{}
	cursor := ""
	for {
		var l struct {
			Groups []struct {
				Group string `json:"group"`
				Org   string `json:"org"`
				CgpID string `json:"cgp_id"`
				RRL   string `json:"rrl"`
			} `json:"groups"`
			NextCursor string `json:"next_cursor"`
			// Unanswered are the nodes of a cluster whose groups the
			// list lacks.
			Unanswered []struct {
				Node     int32  `json:"node"`
				AdminURL string `json:"admin_url"`
				Error    string `json:"error"`
			} `json:"unanswered"`
		}
		q := url.Values{"limit": {strconv.Itoa(adminListPage)}}
		if e.adminOrg != "" {
			q.Set("org", e.adminOrg)
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		if err := e.admin().do(ctx, http.MethodGet, "/api/v1/groups?"+q.Encode(), nil, &l); err != nil {
			return fmt.Errorf("--admin-url: %w", err)
		}
		if cursor == "" {
			for _, u := range l.Unanswered {
				e.warn("--admin-url: node %d (%s) did not answer, so its groups show no CGP-ID or RRL: %s", u.Node, u.AdminURL, u.Error)
			}
		}
		for _, g := range l.Groups {
			byName[g.Group] = append(byName[g.Group], listed{g.Org, g.CgpID, g.RRL})
		}
		if l.NextCursor == "" {
			break
		}
		cursor = l.NextCursor
	}
	l.ids = make([]cohortID, len(l.order))
	for i, r := range l.order {
		id := &l.ids[i]
		for _, g := range byName[l.group(r).Group] {
			if id.CgpID == "" || g.Org == "default" {
				id.CgpID, id.RRL = g.CgpID, g.RRL
			}
		}
	}
	return nil
}

// adminListPage is how many groups addCohortIDs asks the admin API for at
// once (the most it serves); a variable for the tests.
var adminListPage = 10000

// lagStatusCell names the lag status a node has not evaluated yet.
func lagStatusCell(s string) string {
	if s == "" {
		return "UNKNOWN"
	}
	return s
}

// timeToClearCell formats a time to clear: "-" when the lag is not
// shrinking (or nothing is known).
func timeToClearCell(s *float64) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.0fs", *s)
}
