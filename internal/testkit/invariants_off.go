//go:build !invariants

package testkit

// invariants: this test binary was built without the invariants tag, nor
// are the binaries Build makes.
const invariants = false
