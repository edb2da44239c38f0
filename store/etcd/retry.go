package etcd

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Writes whose outcome is unknown.
//
// The etcd client does not retry a transaction once it may have reached a
// member: when the connection to that member breaks (the member was
// killed), or the member times the request out (a leader change), the
// transaction may or may not have been committed, and it may even still be
// on its way and be committed later. Failing the batch would give a
// coordinator shard up for what is a routine event in a three-member
// cluster, so the writer sends the transaction again, within
// Options.Timeout overall. Every attempt, the first included, is
// conditioned so that whichever lands first is the only one that does:
//
//   - A log entry's key is new (this Store's id and a sequence number), so
//     each attempt compares each entry key's CreateRevision with 0. If an
//     earlier attempt landed, the compare fails, and the Else branch's read
//     of the entry keys shows them: the batch is committed, once. An
//     attempt that arrives after another landed changes nothing.
//   - An entry that landed may have been compacted away (deleted, its
//     records in a snapshot) before a later attempt arrives, which would
//     then put it a second time. A compaction moves the log's snapshot key
//     after it has read the entry, so each attempt also compares the
//     snapshot key's ModRevision with a revision observed before the first
//     attempt was sent. If it has moved and no attempt's outcome was
//     unknown, the transaction is sent again with a newer revision; if one
//     was, the outcome stays unknown and the write fails as before (rare:
//     one compaction per Options.CompactEntries entries).
//   - Acquire's owner key holds a value unique to that Acquire, and each
//     attempt puts it only if it is not there yet, else reads its revision.
//
// A fence (the owner key moved), a full database (ErrQuota), an error etcd
// returned for the request itself, and the Store's Close are not retried.
//
// Reads are transactions too (one revision for several ranges), which the
// client does not retry either; they are simply sent again.

// attempts is how many attempts Options.Timeout is shared between, at
// most: each attempt may take Timeout/attempts, so that a member that hangs
// rather than drops the connection still leaves time to try another.
const attempts = 3

// retryBackoff bounds the pause between two attempts; the first is 10 ms,
// doubling.
const retryBackoff = 200 * time.Millisecond

// errUnknownOutcome is wrapped by a write that was retried until
// Options.Timeout and may or may not have been committed.
var errUnknownOutcome = errors.New("the write may or may not have been committed")

// txnWithRetry sends the transaction built by txn, a write that is safe to
// send again (see above), again while its outcome is unknown and ctx (one
// Options.Timeout) allows. Each attempt has at most Timeout/attempts. f is
// the transaction's flight, opened once it retries. unsure reports whether
// an attempt's outcome was unknown (so that an earlier attempt may have
// landed, or still land, when the one answered failed its compare).
func (s *Store) txnWithRetry(ctx context.Context, f *flight, txn func(ctx context.Context) clientv3.Txn) (resp *clientv3.TxnResponse, unsure bool, err error) {
	return s.retry(ctx, s.opts.Timeout/attempts, f, txn)
}

// readWithRetry sends txn, a transaction that only reads, again while it
// fails for a reason that may pass, within ctx. An attempt may take all of
// ctx: a read of a long log may be slow, and a broken connection fails at
// once anyway.
func (s *Store) readWithRetry(ctx context.Context, txn func(ctx context.Context) clientv3.Txn) (*clientv3.TxnResponse, error) {
	resp, _, err := s.retry(ctx, s.opts.Timeout, nil, txn)
	return resp, err
}

// retry is txnWithRetry with each attempt bounded by attempt; f is nil for
// a read.
func (s *Store) retry(ctx context.Context, attempt time.Duration, f *flight, txn func(ctx context.Context) clientv3.Txn) (*clientv3.TxnResponse, bool, error) {
	write := f != nil // a read has no outcome to be unknown
	fail := func(unsure bool, err error) (*clientv3.TxnResponse, bool, error) {
		if unsure && write {
			return nil, true, errors.Join(errUnknownOutcome, err)
		}
		return nil, unsure, err
	}
	pause := 10 * time.Millisecond
	for unsure := false; ; unsure = true {
		actx, cancel := context.WithTimeout(ctx, attempt)
		resp, err := txn(actx).Commit()
		cancel()
		if err == nil {
			s.observeRev(resp.Header.Revision)
			return resp, unsure, nil
		}
		if !unknownOutcome(err) {
			return fail(unsure, err)
		}
		if ctx.Err() != nil {
			return fail(true, err)
		}
		// While this transaction waits, others may go (logs it does
		// not touch).
		if write {
			s.open(f)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fail(true, err)
		case <-t.C:
		}
		pause = min(2*pause, retryBackoff)
	}
}

// unknownOutcome reports whether err, the error of a transaction, leaves
// it unknown whether the transaction was committed, so that it is worth
// sending again: a broken connection, an unavailable or leaderless member,
// a timeout of the attempt, a leader change, a member with too many
// requests. Not a full database, nor a message too large.
func unknownOutcome(err error) bool {
	if errors.Is(err, rpctypes.ErrNoSpace) || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var code codes.Code
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	} else {
		code = status.Code(err)
	}
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted:
		return true
	case codes.ResourceExhausted:
		// Not a message over gRPC's size limit, which would only fail
		// again.
		return errors.Is(err, rpctypes.ErrTooManyRequests)
	}
	return false
}

// observeRev records rev, the revision of a response, as observed: a
// transaction sent later has a larger revision if it lands.
func (s *Store) observeRev(rev int64) {
	for {
		cur := s.lastRev.Load()
		if rev <= cur || s.lastRev.CompareAndSwap(cur, rev) {
			return
		}
	}
}
