package memstore_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/memstore"
	"github.com/cohort-dev/cohort/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Store { return memstore.New(memstore.Options{}) },
		Reopen: func(t *testing.T, old store.Store) store.Store {
			return old.(*memstore.Store).Reopen()
		},
	})
}

func put(key, value string) *store.Batch {
	var b store.Batch
	b.Put([]byte(key), []byte(value))
	return &b
}

// TestFailApply: the hook sees every non-empty write, through the Store
// and its handles; its error fails the write, which writes nothing; and it
// may use the store.
func TestFailApply(t *testing.T) {
	injected := errors.New("injected")
	var s *memstore.Store
	var seen []string
	s = memstore.New(memstore.Options{FailApply: func(b *store.Batch) error {
		key := string(b.Ops[0].Key)
		seen = append(seen, key)
		if _, err := s.Get(b.Ops[0].Key); err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get inside FailApply: %v", err)
		}
		if key[len(key)-1] == '!' {
			return injected
		}
		return nil
	}})
	defer s.Close()
	h, err := s.Acquire([]byte("h/"))
	if err != nil {
		t.Fatal(err)
	}
	asyncErr := func(wait func() error, err error) error {
		if err != nil {
			return err
		}
		return wait()
	}
	for _, tc := range []struct {
		name  string
		err   error
		fails bool
	}{
		{"Store.Apply", s.Apply(put("a", "1")), false},
		{"Store.Apply", s.Apply(put("a!", "1")), true},
		{"Store.ApplyAsync", asyncErr(s.ApplyAsync(put("b!", "1"))), true},
		{"Handle.Apply", h.Apply(put("h/c!", "1")), true},
		{"Handle.ApplyAsync", asyncErr(h.ApplyAsync(put("h/d", "1"))), false},
		{"Handle.ApplyAsync", asyncErr(h.ApplyAsync(put("h/d!", "1"))), true},
		{"Store.Apply(empty batch)", s.Apply(&store.Batch{}), false},
	} {
		if tc.fails != errors.Is(tc.err, injected) {
			t.Errorf("%s = %v, want injected error: %v", tc.name, tc.err, tc.fails)
		}
	}
	if want := []string{"a", "a!", "b!", "h/c!", "h/d", "h/d!"}; !slices.Equal(seen, want) {
		t.Errorf("FailApply saw %q, want %q (an empty batch is not a write)", seen, want)
	}
	var keys []string
	if err := s.Scan(nil, func(k, v []byte) error { keys = append(keys, string(k)); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"a", "h/d"}) {
		t.Errorf("stored keys %q, want [a h/d]: a failed write wrote something", keys)
	}
}

// TestReopenClosesOld: Reopen of a store still open closes it, so that it
// and its handles cannot write into the reopened store's data.
func TestReopenClosesOld(t *testing.T) {
	s := memstore.New(memstore.Options{})
	h, err := s.Acquire([]byte("h/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(put("h/k", "before")); err != nil {
		t.Fatal(err)
	}
	s2 := s.Reopen()
	defer s2.Close()
	if err := s.Apply(put("k", "old store")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Apply on the store Reopen replaced = %v, want ErrClosed", err)
	}
	if err := h.Apply(put("h/k", "old handle")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Apply on a handle of the store Reopen replaced = %v, want ErrClosed", err)
	}
	if err := s.Close(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Close of the store Reopen replaced = %v, want ErrClosed", err)
	}
	v, err := s2.Get([]byte("h/k"))
	if err != nil || string(v) != "before" {
		t.Errorf("after Reopen, h/k = %q, %v; want before", v, err)
	}
	if _, err := s2.Get([]byte("k")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after Reopen, k: %v, want ErrNotFound", err)
	}
}
