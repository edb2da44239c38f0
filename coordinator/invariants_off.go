//go:build !invariants

package coordinator

// invariantsOn: without the invariants tag the runtime checks nothing, and
// the compiler drops the checks' branches (invariants.go).
const invariantsOn = false
