//go:build race

package offsets

// raceOn: the race detector is on, which keeps the compiler from folding
// slices.Grow's make into its append: an allocation the counts of the
// tests do not expect.
const raceOn = true
