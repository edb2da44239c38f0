package node

import (
	"context"
	"log/slog"
	"sync"
)

// heldHandler holds log records until release: during start-up, the
// store logs a failure to open and also returns it, and a failed start
// should say its cause once. Released with keep, the held records are
// written as they were; without, at DEBUG level, so that they are still
// there with --log-level debug.
type heldHandler struct {
	inner slog.Handler
	st    *heldState // shared with the handlers WithAttrs and WithGroup make
}

type heldState struct {
	mu      sync.Mutex
	holding bool
	recs    []heldRecord
}

type heldRecord struct {
	h slog.Handler
	r slog.Record
}

func newHeldHandler(inner slog.Handler) *heldHandler {
	return &heldHandler{inner: inner, st: &heldState{holding: true}}
}

func (h *heldHandler) Enabled(ctx context.Context, l slog.Level) bool {
	// While holding, take everything down to DEBUG: whether a record is
	// written depends on how it is released.
	h.st.mu.Lock()
	holding := h.st.holding
	h.st.mu.Unlock()
	return holding || h.inner.Enabled(ctx, l)
}

func (h *heldHandler) Handle(ctx context.Context, r slog.Record) error {
	h.st.mu.Lock()
	if h.st.holding {
		h.st.recs = append(h.st.recs, heldRecord{h.inner, r.Clone()})
		h.st.mu.Unlock()
		return nil
	}
	h.st.mu.Unlock()
	if !h.inner.Enabled(ctx, r.Level) {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

func (h *heldHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &heldHandler{inner: h.inner.WithAttrs(as), st: h.st}
}

func (h *heldHandler) WithGroup(name string) slog.Handler {
	return &heldHandler{inner: h.inner.WithGroup(name), st: h.st}
}

// release writes the held records (at DEBUG unless keep) and stops
// holding.
func (h *heldHandler) release(keep bool) {
	h.st.mu.Lock()
	recs := h.st.recs
	h.st.recs, h.st.holding = nil, false
	h.st.mu.Unlock()
	ctx := context.Background()
	for _, hr := range recs {
		if !keep {
			hr.r.Level = slog.LevelDebug
		}
		if hr.h.Enabled(ctx, hr.r.Level) {
			hr.h.Handle(ctx, hr.r)
		}
	}
}
