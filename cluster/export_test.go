package cluster

// Crash stops the member as a killed process would: its units stop, and
// its lease is left to expire.
func (m *Member) Crash() {
	m.stopOne.Do(func() {
		m.cancel()
		if m.units != nil {
			<-m.stopped
		}
		m.done.Wait()
	})
}
