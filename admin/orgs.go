package admin

// Organisation management over HTTP, for operators only:
//
//	GET    /api/v1/orgs                              every organisation and its members
//	POST   /api/v1/orgs {"name": N}                  create one
//	DELETE /api/v1/orgs/{org}                        delete one with no members left
//	PUT    /api/v1/orgs/{org}/members/{principal}    put a principal in it (moving it
//	                                                 from any other; "default": back to default)
//	DELETE /api/v1/orgs/{org}/members/{principal}    take a principal out (back to default)
//
// The registry (security.Orgs) writes records through the store's global
// log, so every node sees the change.

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/cohort-dev/cohort/security"
)

// OrgInfo is an organisation in GET /api/v1/orgs.
type OrgInfo struct {
	Name string `json:"name"`
	// CreatedAt is absent for the default organisation, which always is.
	CreatedAt *time.Time `json:"created_at,omitempty"`
	// Members are the principals put in it, sorted; the default
	// organisation lists none: it has every principal no other names.
	Members []string `json:"members"`
}

// OrgMembership is the answer to a membership change.
type OrgMembership struct {
	Principal string `json:"principal"`
	Org       string `json:"org"`
}

func (a *API) orgRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/orgs", a.orgsOnly(a.listOrgs))
	mux.HandleFunc("POST /api/v1/orgs", a.orgsOnly(a.createOrg))
	mux.HandleFunc("DELETE /api/v1/orgs/{org}", a.orgsOnly(a.deleteOrg))
	mux.HandleFunc("PUT /api/v1/orgs/{org}/members/{principal}", a.orgsOnly(a.addMember))
	mux.HandleFunc("DELETE /api/v1/orgs/{org}/members/{principal}", a.orgsOnly(a.removeMember))
}

// orgsOnly serves h to operators when there is a registry.
func (a *API) orgsOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.cfg.Orgs == nil {
			writeError(w, http.StatusNotFound, "organisations are not kept by this node")
			return
		}
		if operatorOnly(w, r) {
			h(w, r)
		}
	}
}

func orgInfo(o security.Org) OrgInfo {
	info := OrgInfo{Name: o.Name, Members: o.Members}
	if !o.Created.IsZero() {
		at := o.Created
		info.CreatedAt = &at
	}
	if info.Members == nil {
		info.Members = []string{}
	}
	return info
}

func (a *API) listOrgs(w http.ResponseWriter, _ *http.Request) {
	out := []OrgInfo{}
	for _, o := range a.cfg.Orgs.List() {
		out = append(out, orgInfo(o))
	}
	writeJSON(w, http.StatusOK, map[string]any{"orgs": out})
}

func (a *API) createOrg(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name string `json:"name"`
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, `the body must be a JSON object {"name": "..."}: `+err.Error())
		return
	}
	if err := security.ValidateOrgName(body.Name); err != nil {
		code := http.StatusBadRequest
		if body.Name == security.DefaultOrg {
			code = http.StatusConflict // it exists, always
		}
		writeError(w, code, err.Error())
		return
	}
	if err := a.cfg.Orgs.Create(body.Name); err != nil {
		writeError(w, orgErrorCode(err), err.Error())
		return
	}
	for _, o := range a.cfg.Orgs.List() {
		if o.Name == body.Name {
			writeJSON(w, http.StatusCreated, orgInfo(o))
			return
		}
	}
	writeJSON(w, http.StatusCreated, OrgInfo{Name: body.Name, Members: []string{}})
}

func (a *API) deleteOrg(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("org")
	if name == security.DefaultOrg {
		writeError(w, http.StatusBadRequest, "the default organisation cannot be deleted")
		return
	}
	if err := a.cfg.Orgs.Delete(name); err != nil {
		writeError(w, orgErrorCode(err), err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) addMember(w http.ResponseWriter, r *http.Request) {
	name, principal := r.PathValue("org"), r.PathValue("principal")
	if _, _, err := security.ParsePrincipal(principal); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := a.cfg.Orgs.SetMember(name, principal); err != nil {
		writeError(w, orgErrorCode(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, OrgMembership{Principal: principal, Org: name})
}

func (a *API) removeMember(w http.ResponseWriter, r *http.Request) {
	name, principal := r.PathValue("org"), r.PathValue("principal")
	p, err := parsePrincipal(principal)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	switch {
	case name == security.DefaultOrg:
		writeError(w, http.StatusBadRequest, "every principal no other organisation names is in the default one: put it in another organisation instead")
		return
	case !a.cfg.Orgs.Exists(name):
		writeError(w, http.StatusNotFound, security.ErrOrgNotFound.Error()+": "+name)
		return
	case a.cfg.Orgs.TenantOf(p) != name:
		writeError(w, http.StatusNotFound, principal+" is not a member of organisation "+name)
		return
	}
	if err := a.cfg.Orgs.SetMember(security.DefaultOrg, principal); err != nil {
		writeError(w, orgErrorCode(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, OrgMembership{Principal: principal, Org: security.DefaultOrg})
}

func parsePrincipal(s string) (security.Principal, error) {
	typ, name, err := security.ParsePrincipal(s)
	return security.Principal{Type: typ, Name: name}, err
}

// orgErrorCode is the HTTP status of a registry error.
func orgErrorCode(err error) int {
	switch {
	case errors.Is(err, security.ErrOrgExists), errors.Is(err, security.ErrOrgNotEmpty):
		return http.StatusConflict
	case errors.Is(err, security.ErrOrgNotFound):
		return http.StatusNotFound
	default:
		return http.StatusServiceUnavailable
	}
}
