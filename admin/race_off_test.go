//go:build !race

package admin

// raceOn: the race detector is on, and slows the tests several times.
const raceOn = false
