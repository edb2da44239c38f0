package admin

// Who an admin HTTP request acts for, and what it may see. Operators (the
// admin token, a super user, or anyone when the API is open) see every
// organisation; any other principal sees its own organisation's groups
// and metric series only: another organisation's group answers 404
// exactly as a missing one does, so that a name's existence elsewhere is
// not revealed, and asking for another organisation by name is 403.

import (
	"context"
	"net/http"

	"github.com/cohort-dev/cohort/security"
)

// Caller is who an admin HTTP request acts for.
type Caller struct {
	// Principal is the authenticated principal ("User:alice"), or
	// User:ANONYMOUS on an open API.
	Principal string
	// Operator callers see and manage every organisation.
	Operator bool
	// Tenant is a non-operator's organisation's tenant ("" for the
	// default organisation); unused for operators.
	Tenant string
}

// Org is the name of a non-operator caller's organisation.
func (c Caller) Org() string { return security.OrgName(c.Tenant) }

type callerKey struct{}

// withCaller returns r carrying c.
func withCaller(r *http.Request, c Caller) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), callerKey{}, c))
}

// callerOf is the caller of r: an operator when nothing says otherwise
// (Config.Caller unset, as for an API without authentication).
func callerOf(r *http.Request) Caller {
	if c, ok := r.Context().Value(callerKey{}).(Caller); ok {
		return c
	}
	return Caller{Principal: security.Anonymous.String(), Operator: true}
}

// scope is which tenants a request about groups covers: all of them
// (all), or the one tenant. An operator names one with ?org=NAME (or the
// older ?tenant=T, the raw tenant, "" the default); a non-operator's is
// its own, and naming another is forbidden (ok false, 403 written).
type scope struct {
	all    bool
	tenant string
}

func (s scope) has(tenant string) bool { return s.all || s.tenant == tenant }

func requestScope(w http.ResponseWriter, r *http.Request) (scope, bool) {
	c := callerOf(r)
	q := r.URL.Query()
	var named *string
	if q.Has("org") {
		t := security.TenantOfOrg(q.Get("org"))
		named = &t
	} else if q.Has("tenant") {
		t := q.Get("tenant")
		named = &t
	}
	if c.Operator {
		if named == nil {
			return scope{all: true}, true
		}
		return scope{tenant: *named}, true
	}
	if named != nil && *named != c.Tenant {
		writeError(w, http.StatusForbidden, c.Principal+" is in organisation "+c.Org()+" and may not read organisation "+security.OrgName(*named))
		return scope{}, false
	}
	return scope{tenant: c.Tenant}, true
}

// groupTenant is the tenant a request about one group means: the one
// ?org= or ?tenant= names (an operator's; default the default
// organisation), or the caller's own.
func groupTenant(w http.ResponseWriter, r *http.Request) (string, bool) {
	s, ok := requestScope(w, r)
	if !ok {
		return "", false
	}
	if s.all {
		return "", true
	}
	return s.tenant, true
}

// operatorOnly writes 403 unless r's caller is an operator.
func operatorOnly(w http.ResponseWriter, r *http.Request) bool {
	c := callerOf(r)
	if !c.Operator {
		writeError(w, http.StatusForbidden, c.Principal+" is not an operator: only the admin token, a super user (--super-users) or an open API may do this")
		return false
	}
	return true
}
