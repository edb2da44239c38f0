package global

import (
	"strings"

	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Wildcards of ACL bindings, as Kafka's: a literal resource name, a
// principal and a host that match every one.
const (
	WildcardResource  = "*"
	WildcardPrincipal = "User:*"
	WildcardHost      = "*"
)

// ACLFilter selects ACLs of one tenant, as Kafka's AclBindingFilter: ANY
// (a type, a pattern type, an operation, a permission) and nil (a name, a
// principal, a host) match every value; pattern type MATCH matches the
// ACLs that would apply to the resource Name names: LITERAL ones of it or
// "*", PREFIXED ones of a prefix of it.
type ACLFilter struct {
	// Tenant is the organisation whose ACLs the filter selects: always
	// exactly one, the caller's ("" the default one).
	Tenant       string
	ResourceType kmsg.ACLResourceType
	Name         *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Matches reports whether f selects acl.
func (f ACLFilter) Matches(acl record.ACL) bool {
	if f.Tenant != acl.Tenant {
		return false
	}
	if f.ResourceType != kmsg.ACLResourceTypeAny && int8(f.ResourceType) != acl.ResourceType {
		return false
	}
	pt := kmsg.ACLResourcePatternType(acl.PatternType)
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny:
		if f.Name != nil && *f.Name != acl.Name {
			return false
		}
	case kmsg.ACLResourcePatternTypeMatch:
		if f.Name != nil {
			switch pt {
			case kmsg.ACLResourcePatternTypeLiteral:
				if acl.Name != *f.Name && acl.Name != WildcardResource {
					return false
				}
			case kmsg.ACLResourcePatternTypePrefixed:
				if !strings.HasPrefix(*f.Name, acl.Name) {
					return false
				}
			default:
				return false
			}
		}
	default:
		if f.PatternType != pt || (f.Name != nil && *f.Name != acl.Name) {
			return false
		}
	}
	if f.Principal != nil && *f.Principal != acl.Principal {
		return false
	}
	if f.Host != nil && *f.Host != acl.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && int8(f.Operation) != acl.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || int8(f.Permission) == acl.Permission
}

// Unknown reports whether f has an UNKNOWN element, which Kafka refuses.
func (f ACLFilter) Unknown() bool {
	return f.ResourceType == kmsg.ACLResourceTypeUnknown || f.PatternType == kmsg.ACLResourcePatternTypeUnknown ||
		f.Operation == kmsg.ACLOperationUnknown || f.Permission == kmsg.ACLPermissionTypeUnknown
}
