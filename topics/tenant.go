package topics

import "strings"

// The topic log has one flat namespace; organisations (tenants) share it.
// A non-default tenant's topic is kept under the internal name
// "<tenant>/<name>": '/' is not legal in a Kafka topic name, so an
// internal name can neither collide with a default-organisation topic
// (which keeps its plain name) nor be named by a client. The Kafka layer
// maps names in and out at its boundary (kafka/scope.go); the admin API
// and the lag metrics map a group's topics to the log's names with its
// organisation.

// Owner splits a topic log name into the tenant that owns the topic and
// the name its clients know it by: ("", name) for a default-organisation
// topic.
func Owner(internal string) (tenant, name string) {
	if i := strings.IndexByte(internal, '/'); i >= 0 {
		return internal[:i], internal[i+1:]
	}
	return "", internal
}

// Internal is the topic log's name of the tenant's topic name.
func Internal(tenant, name string) string {
	if tenant == "" {
		return name
	}
	return tenant + "/" + name
}
