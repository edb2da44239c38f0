package testkit

import "time"

// FireDue runs a pure machine's timers in fake time, as the coordinator
// runtime does: every timer in timers (key → deadline) due by end, in
// deadline order (ties by key), each with *now moved to its deadline and
// its entry removed first. fire may set or cancel timers in the map.
// *now is left at the last deadline fired; the caller moves it to end.
func FireDue(timers map[string]time.Time, now *time.Time, end time.Time, fire func(key string)) {
	for {
		key, at := "", time.Time{}
		for k, t := range timers {
			if at.IsZero() || t.Before(at) || (t.Equal(at) && k < key) {
				key, at = k, t
			}
		}
		if key == "" || at.After(end) {
			return
		}
		delete(timers, key)
		if at.After(*now) {
			*now = at
		}
		fire(key)
	}
}
