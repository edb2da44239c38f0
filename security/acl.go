package security

// Authorization: Kafka's ACL model (KIP-11, KIP-290's prefixed patterns)
// over the principals authentication gives. The ACLs are records of the
// global unit (record.KindACL, coordinator/global); an Authorizer is a
// view of them, indexed for the checks every request makes, rebuilt from
// each snapshot the unit hands it, and sends the unit its changes.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/cohort-dev/cohort/coordinator/global"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Wildcards, as Kafka's: a literal resource name, a principal and a host
// that match every one.
const (
	WildcardResource  = global.WildcardResource
	WildcardPrincipal = global.WildcardPrincipal
	WildcardHost      = global.WildcardHost
	// ClusterName is the only name of the CLUSTER resource.
	ClusterName = "kafka-cluster"
)

// AuthorizerConfig configures an Authorizer.
type AuthorizerConfig struct {
	// Global is the global unit that keeps the ACLs. Required.
	Global global.Unit
	// SuperUsers may do everything, ACLs or not (Kafka's super.users):
	// principals as "User:alice".
	SuperUsers []string
	// AllowEveryoneIfNoACLFound allows every operation on a resource no
	// ACL matches at all (Kafka's allow.everyone.if.no.acl.found).
	// Default false: a resource without ACLs is super users' only.
	AllowEveryoneIfNoACLFound bool
}

// Authorizer decides what a principal may do: Kafka's StandardAuthorizer
// rules. A super user may do everything. Otherwise the ACLs whose pattern
// matches the resource (a LITERAL one of its name or "*", a PREFIXED one
// of a prefix of its name) decide: none at all allows only when
// AllowEveryoneIfNoACLFound; else a DENY matching the principal, host and
// operation (or ALL) refuses, and an ALLOW matching them allows, where
// ALLOW of READ, WRITE, DELETE or ALTER implies DESCRIBE and ALLOW of
// ALTER_CONFIGS implies DESCRIBE_CONFIGS. It is safe for concurrent use.
type Authorizer struct {
	unit        global.Unit
	super       map[string]bool
	allowIfNone bool

	set atomic.Pointer[aclSet]
}

// aclSet is one load of every ACL: all of them, and each tenant's
// indexed by resource. An organisation's ACLs apply to its principals
// only; no request ever looks at another tenant's index.
type aclSet struct {
	all      []record.ACL
	byTenant map[string]*tenantACLs
}

// tenantACLs are one tenant's ACLs, indexed by resource.
type tenantACLs struct {
	all      []record.ACL
	literal  map[resource][]record.ACL // by type and name ("*" included)
	prefixed map[kmsg.ACLResourceType][]record.ACL
}

// noACLs is the index of a tenant without ACLs.
var noACLs = &tenantACLs{}

// of is the index of tenant's ACLs.
func (s *aclSet) of(tenant string) *tenantACLs {
	if t := s.byTenant[tenant]; t != nil {
		return t
	}
	return noACLs
}

type resource struct {
	typ  kmsg.ACLResourceType
	name string
}

// NewAuthorizer is a view of the ACLs of cfg.Global.
func NewAuthorizer(cfg AuthorizerConfig) (*Authorizer, error) {
	if cfg.Global == nil {
		return nil, fmt.Errorf("authorizer: AuthorizerConfig needs Global")
	}
	a := &Authorizer{unit: cfg.Global, super: map[string]bool{}, allowIfNone: cfg.AllowEveryoneIfNoACLFound}
	for _, u := range cfg.SuperUsers {
		if _, _, err := ParsePrincipal(u); err != nil {
			return nil, fmt.Errorf("super user: %w", err)
		}
		a.super[u] = true
	}
	cfg.Global.Subscribe(a.update)
	return a, nil
}

// ParsePrincipal splits "User:alice" into its type and name, as Kafka's
// SecurityUtils.parseKafkaPrincipal: the type is what comes before the
// first colon, and neither may be empty.
func ParsePrincipal(s string) (typ, name string, err error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok || typ == "" || name == "" {
		return "", "", fmt.Errorf("principal %q is not of the form Type:name", s)
	}
	return typ, name, nil
}

// ParseSuperUsers splits Kafka's super.users form, "User:a;User:b".
func ParseSuperUsers(s string) ([]string, error) {
	var out []string
	for _, u := range strings.Split(s, ";") {
		if u = strings.TrimSpace(u); u == "" {
			continue
		}
		if _, _, err := ParsePrincipal(u); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// update indexes the ACLs of a snapshot of the global unit.
func (a *Authorizer) update(snap *global.Snapshot) {
	set := &aclSet{byTenant: map[string]*tenantACLs{}}
	for _, acl := range snap.ACLs {
		set.all = append(set.all, acl)
		t := set.byTenant[acl.Tenant]
		if t == nil {
			t = &tenantACLs{literal: map[resource][]record.ACL{}, prefixed: map[kmsg.ACLResourceType][]record.ACL{}}
			set.byTenant[acl.Tenant] = t
		}
		t.all = append(t.all, acl)
		rt := kmsg.ACLResourceType(acl.ResourceType)
		if kmsg.ACLResourcePatternType(acl.PatternType) == kmsg.ACLResourcePatternTypePrefixed {
			t.prefixed[rt] = append(t.prefixed[rt], acl)
		} else {
			r := resource{rt, acl.Name}
			t.literal[r] = append(t.literal[r], acl)
		}
	}
	a.set.Store(set)
}

// Request is who asks: the principal and the client's IP address.
type Request struct {
	Principal Principal
	Host      string // an IP address, "127.0.0.1"; a leading "/" is ignored
	// Tenant is the organisation Principal belongs to: only ACLs of that
	// tenant apply ("" the default organisation's).
	Tenant string
}

// IsSuperUser reports whether p is one of the super users.
func (a *Authorizer) IsSuperUser(p Principal) bool { return a.super[p.String()] }

// Authorize reports whether r may do op on the resource of type typ named
// name, a resource of r's tenant: only the tenant's ACLs count (and
// "no ACL found" means none of the tenant's). Super users are operators
// of every tenant.
func (a *Authorizer) Authorize(r Request, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	if a.IsSuperUser(r.Principal) {
		return true
	}
	set := a.set.Load().of(r.Tenant)
	principal := r.Principal.String()
	host := strings.TrimPrefix(r.Host, "/")
	found, allowed := false, false
	// By index, not by value: a binding is some 80 bytes, and the
	// prefixed ones are scanned on every check.
	check := func(acls []record.ACL) (denied bool) {
		for i := range acls {
			acl := &acls[i]
			found = true
			if acl.Principal != principal && acl.Principal != WildcardPrincipal {
				continue
			}
			if acl.Host != host && acl.Host != WildcardHost {
				continue
			}
			aop := kmsg.ACLOperation(acl.Operation)
			if kmsg.ACLPermissionType(acl.Permission) == kmsg.ACLPermissionTypeDeny {
				if aop == op || aop == kmsg.ACLOperationAll {
					return true
				}
				continue
			}
			if implies(aop, op) {
				allowed = true
			}
		}
		return false
	}
	if check(set.literal[resource{typ, name}]) || check(set.literal[resource{typ, WildcardResource}]) {
		return false
	}
	prefixed := set.prefixed[typ]
	for i := range prefixed {
		if strings.HasPrefix(name, prefixed[i].Name) && check(prefixed[i:i+1]) {
			return false
		}
	}
	if !found {
		return a.allowIfNone
	}
	return allowed
}

// AuthorizeByResourceType reports whether r may do op on some resource of
// type typ, as Kafka's authorizeByResourceType (what InitProducerId
// without a transactional id asks for WRITE on topics): an ALLOW of op
// (or one implying it) for r on any resource of the type, unless a DENY
// of op on every one of them (LITERAL "*") applies; with no ACL of the
// type at all, AllowEveryoneIfNoACLFound. Kafka's finer rule, that a
// PREFIXED DENY covering every ALLOW also refuses, is not applied.
func (a *Authorizer) AuthorizeByResourceType(r Request, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	if a.IsSuperUser(r.Principal) {
		return true
	}
	principal := r.Principal.String()
	host := strings.TrimPrefix(r.Host, "/")
	found, allowed := false, false
	for _, acl := range a.set.Load().of(r.Tenant).all {
		if kmsg.ACLResourceType(acl.ResourceType) != typ {
			continue
		}
		found = true
		if (acl.Principal != principal && acl.Principal != WildcardPrincipal) || (acl.Host != host && acl.Host != WildcardHost) {
			continue
		}
		aop := kmsg.ACLOperation(acl.Operation)
		if kmsg.ACLPermissionType(acl.Permission) == kmsg.ACLPermissionTypeDeny {
			if acl.Name == WildcardResource && kmsg.ACLResourcePatternType(acl.PatternType) == kmsg.ACLResourcePatternTypeLiteral &&
				(aop == op || aop == kmsg.ACLOperationAll) {
				return false
			}
			continue
		}
		if implies(aop, op) {
			allowed = true
		}
	}
	if !found {
		return a.allowIfNone
	}
	return allowed
}

// implies reports whether an ALLOW of have allows want.
func implies(have, want kmsg.ACLOperation) bool {
	switch {
	case have == want, have == kmsg.ACLOperationAll:
		return true
	case want == kmsg.ACLOperationDescribe:
		switch have {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case want == kmsg.ACLOperationDescribeConfigs:
		return have == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// Operations are the operations each resource type supports, as Kafka's
// AclEntry.supportedOperations: what AuthorizedOperations reports on.
var Operations = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete},
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
		kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe},
	kmsg.ACLResourceTypeTransactionalId: {kmsg.ACLOperationDescribe, kmsg.ACLOperationWrite},
}

// AuthorizedOperations is Kafka's bit field of the operations r may do
// on the resource: bit n set for operation n.
func (a *Authorizer) AuthorizedOperations(r Request, typ kmsg.ACLResourceType, name string) int32 {
	var bits int32
	for _, op := range Operations[typ] {
		if a.Authorize(r, op, typ, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// Filter selects ACLs of one tenant, as Kafka's AclBindingFilter (the
// global unit's, which deletes by it).
type Filter = global.ACLFilter

// ACLs returns the ACLs f selects, in key order.
func (a *Authorizer) ACLs(f Filter) []record.ACL {
	var out []record.ACL
	for _, acl := range a.set.Load().of(f.Tenant).all {
		if f.Matches(acl) {
			out = append(out, acl)
		}
	}
	return out
}

// ValidateACL checks a new binding as Kafka's CreateAcls does: it returns
// the message of its INVALID_REQUEST, or "" if the binding is valid.
func ValidateACL(acl record.ACL) string {
	switch kmsg.ACLResourceType(acl.ResourceType) {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster, kmsg.ACLResourceTypeTransactionalId,
		kmsg.ACLResourceTypeDelegationToken, kmsg.ACLResourceTypeUser:
	default:
		return fmt.Sprintf("Invalid resourceType %d", acl.ResourceType)
	}
	switch kmsg.ACLResourcePatternType(acl.PatternType) {
	case kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed:
	default:
		return fmt.Sprintf("Invalid patternType %d", acl.PatternType)
	}
	if op := kmsg.ACLOperation(acl.Operation); op <= kmsg.ACLOperationAny || op > kmsg.ACLOperationDescribeTokens {
		return fmt.Sprintf("Invalid operation %d", acl.Operation)
	}
	switch kmsg.ACLPermissionType(acl.Permission) {
	case kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny:
	default:
		return fmt.Sprintf("Invalid permissionType %d", acl.Permission)
	}
	if acl.Name == "" {
		return "Resource name should not be empty"
	}
	if kmsg.ACLResourceType(acl.ResourceType) == kmsg.ACLResourceTypeCluster && acl.Name != ClusterName {
		return fmt.Sprintf("The only valid name for the CLUSTER resource is %s", ClusterName)
	}
	if _, _, err := ParsePrincipal(acl.Principal); err != nil {
		return fmt.Sprintf("Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", acl.Principal)
	}
	return ""
}

// CreateACLs stores acls (validated by the caller) in one durable batch
// of the global unit.
func (a *Authorizer) CreateACLs(acls []record.ACL) error {
	if _, err := a.unit.Do(context.Background(), global.CreateACLs{ACLs: acls}); err != nil {
		return fmt.Errorf("write ACLs: %w", err)
	}
	return nil
}

// DeleteACLs deletes every ACL each filter selects, in one durable batch
// of the global unit, and returns each filter's.
func (a *Authorizer) DeleteACLs(filters []Filter) ([][]record.ACL, error) {
	out, err := a.unit.Do(context.Background(), global.DeleteACLs{Filters: filters})
	if err != nil {
		return nil, fmt.Errorf("delete ACLs: %w", err)
	}
	return out.([][]record.ACL), nil
}

// SortACLs orders acls by resource then entry, for stable answers.
func SortACLs(acls []record.ACL) {
	sort.Slice(acls, func(i, j int) bool { return string(acls[i].Key()) < string(acls[j].Key()) })
}
