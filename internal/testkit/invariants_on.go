//go:build invariants

package testkit

// invariants: this test binary was built with the invariants tag, so the
// binaries Build makes carry the runtime's checks too
// (coordinator/invariants.go).
const invariants = true
