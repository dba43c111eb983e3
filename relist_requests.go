package cache

import (
	"context"
	"sync"
)

// relistRequests holds the requests, made from any goroutine, that the
// Reflector relist because what it gave its store could not be applied
// further on: an informer's indexer failed to apply a change its queue had
// accepted (see ErrIndexerFailed). A request ends the cycle in progress
// (its watch, a LIST in flight, a backoff wait within it), or, made between
// cycles, the next one as it begins; the cycle then carries out what that
// means (classify's atIndexer: Degraded StoreFailing at once, and a relist
// after a backoff delay). It is the one owner of that state; its mutex
// guards every field.
type relistRequests struct {
	mu sync.Mutex
	// err is the latest request not yet carried out; nil when none waits.
	err error
	// cancel ends the cycle in progress; nil between cycles.
	cancel context.CancelFunc
}

// request asks for a relist because of err, ending the cycle in progress.
func (q *relistRequests) request(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.err = err
	if q.cancel != nil {
		q.cancel()
	}
}

// begin starts a cycle whose parent context is ctx: the returned context
// ends with ctx or at a request, at once if one is waiting.
func (q *relistRequests) begin(ctx context.Context) context.Context {
	cctx, cancel := context.WithCancel(ctx)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.cancel = cancel
	if q.err != nil {
		cancel()
	}
	return cctx
}

// end ends the cycle begin started and hands over the request to carry
// out, if any. When ctx, the cycle's parent, has ended (Run stops, or the
// shard changed) it hands over nothing: a request waits for the next
// cycle.
func (q *relistRequests) end(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.cancel()
	q.cancel = nil
	if ctx.Err() != nil {
		return nil
	}
	err := q.err
	q.err = nil
	return err
}

// relistFor asks the Reflector, from any goroutine, to relist because err
// (wrapping ErrIndexerFailed): what it gave its store could not be applied
// further on. The failure is logged at error level and counted
// (Stats.IndexerFailures, reflector_indexer_failures_total); the cycle in
// progress ends, Health turns Degraded (ReasonStoreFailing, err as
// LastError) at once, and after a backoff delay the Reflector relists
// (Lists[store_refused]), so that once the store applies what it is given
// again, it holds what the server has.
func (r *Reflector) relistFor(err error) {
	r.logger.Error(err, "Relisting: the store could not apply a change", "reflector", r.name, "type", r.typeDescription)
	r.stats.indexerFailed()
	r.relists.request(err)
}

// relistIfAsked carries out, as the cycle ends, a request to relist that
// ended it or came while it ran (see relistRequests): a failure at
// atIndexer. A cycle cut short by it did not fail otherwise, so it
// returns no error of its own (the cut may have looked like one to the
// call in flight). cut says whether the cycle's context had ended; ctx is
// its parent.
func (c *cycle) relistIfAsked(ctx context.Context, cut bool) {
	err := c.r.relists.end(ctx)
	if err == nil {
		return
	}
	if cut {
		c.err = nil
	}
	c.apply(classify(atIndexer, err, facts{}), c.r.pos.watchRV(), err)
}
