//go:build invariants

package coordinator

// invariantsOn: built with the invariants tag, the runtime checks every
// shard's machine as it runs (invariants.go). The test suite sets the tag
// everywhere (test.sh); production builds do not.
const invariantsOn = true
