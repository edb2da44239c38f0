package kafka

// BudgetFree is how many bytes of QueuedMaxRequestBytes are free (-1
// when unbounded), for tests.
func (s *Server) BudgetFree() int64 {
	if s.budget == nil {
		return -1
	}
	s.budget.mu.Lock()
	defer s.budget.mu.Unlock()
	return s.budget.free
}
