package main

// What only a Cohort node knows about a group, read from its admin JSON
// API when --admin-url names one: the stable cgp_ id and RRL, and the lag
// status and time to clear (admin/lagstatus.go). No Kafka response carries
// them, so against any other broker these columns are simply absent.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
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
	} `json:"partitions"`
}

// addCohortInfo fills what the node at e.adminURL knows of each group. A
// group the node does not have (in a cluster, another node coordinates
// it) keeps its fields empty; a node that cannot be read is an error.
func addCohortInfo(e *groupsEnv, gs []describedGroup) error {
	if e.adminURL == "" {
		return nil
	}
	ctx, cancel := e.ctx()
	defer cancel()
	base := strings.TrimSuffix(e.adminURL, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	for i := range gs {
		g := &gs[i]
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/groups/"+url.PathEscape(g.Group), nil)
		if err != nil {
			return fmt.Errorf("--admin-url: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("--admin-url: %w", err)
		}
		var cg cohortGroup
		switch resp.StatusCode {
		case http.StatusOK:
			err = json.NewDecoder(resp.Body).Decode(&cg)
		case http.StatusNotFound:
		default:
			err = fmt.Errorf("GET %s: %s", req.URL, resp.Status)
		}
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("--admin-url: %w", err)
		}
		if cg.CgpID == "" {
			continue
		}
		g.CgpID, g.RRL, g.Status, g.TimeToClearSeconds = cg.CgpID, cg.RRL, lagStatusCell(cg.Status), cg.TimeToClearSeconds
		for _, cp := range cg.Partitions {
			for j := range g.Partitions {
				if p := &g.Partitions[j]; p.Topic == cp.Topic && p.Partition == cp.Partition {
					p.Status = lagStatusCell(cp.Status)
				}
			}
		}
	}
	return nil
}

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
