package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	goruntime "runtime"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/kreflector/cache/internal/listhint"
	"github.com/kreflector/cache/internal/listitems"
	"github.com/kreflector/cache/internal/listwatch"
)

// defaultPageSize is the LIST page size when paging is on and
// Reflector.WatchListPageSize is not set.
const defaultPageSize = 500

// pageSizeFor is the LIST page size for a list at rv: the user's choice,
// else the default when the server is known to page (no watch cache) or
// the list may be served from any cache (RV "" or "0"), else no paging so
// the watch cache can answer an exact-RV relist.
func (r *Reflector) pageSizeFor(rv string) int64 {
	switch {
	case r.WatchListPageSize != 0:
		return r.WatchListPageSize
	case r.server.pagedAtRV0, rv == "", rv == "0":
		return defaultPageSize
	default:
		return 0
	}
}

// listed is the outcome of a complete (possibly paginated) LIST.
type listed struct {
	items []interface{}
	// resourceVersion is the list's resourceVersion (of its first page).
	resourceVersion string
	// paged says the server split the answer into more than one page.
	paged bool
	// pageRetries counts pages retried after transient errors;
	// pagesUnused the pages requested ahead and never used.
	pageRetries, pagesUnused int
	// shardDropped counts items left out as outside the shard;
	// shardIgnored says a page came without the selector's echo.
	shardDropped int
	shardIgnored bool
	// reused counts items replaced by the object the store held,
	// notDecoded those of them the ListWatch did not decode.
	reused, notDecoded int
}

// pager runs paginated LISTs.
type pager struct {
	lister ListerWithContext
	// pageSize is the Limit when the options have none (0: no paging).
	pageSize int64
	// retry retries continued pages after transient errors (the zero
	// value never does).
	retry pageRetry
	// shard checks each page of a sharded Reflector; nil when unsharded.
	shard *shardCheck
	// in prepares each page's items once they are checked; nil for none.
	in *intake
	// reuse says whether in looks for the objects the store holds.
	reuse bool
	// hint is what list offers the ListWatch through the context of each
	// page's call, under the contract internal/listhint states: in's lean
	// steps run where items are decoded, managedFields left out when in
	// drops them, and pages requested ahead.
	hint *listhint.Hint
}

// itemFunc is what the ListWatch may run on each item where it decodes
// it: in's lean steps, unless nothing is made lean or the store's held
// objects are looked up first (a relist: see intake.prepare).
func (p *pager) itemFunc() listhint.ItemFunc {
	if p.in == nil || !p.in.leans() || p.reuse {
		return nil
	}
	return p.in.lean
}

// heldFunc is what the ListWatch may ask before decoding each item of a
// relist (see listhint.HeldFunc), nil if it may not: only when the lister
// is our own ListWatch unwrapped (nobody else sees the lists with items
// left out) and the store is an informer's indexer, whose keys are
// namespace/name. A sharded LIST's lookup answers only for held objects
// in the shard (see shardSpec.heldIn).
func (p *pager) heldFunc() listhint.HeldFunc {
	if !p.reuse || !listwatch.Direct(p.lister) {
		return nil
	}
	if p.shard != nil {
		return p.shard.spec.heldIn(p.in.heldByName())
	}
	return p.in.heldByName()
}

// list LISTs with opts, following continue tokens, and gathers the items.
// Each item is in an allocation of its own (copied out of its page, or as
// our ListWatch decoded it: listitems.AppendOwned), so the store never
// pins whole pages.
// A continued page that fails transiently is retried from its token (see
// pageRetry); if a continue token expires, list falls back to one
// unpaginated LIST at the original resourceVersion. list owns opts while it
// runs (it sets the limit and the continue token on it).
//
// It runs at the bottom of a new goroutine whose stack starts small, so
// its frame is kept small: the options and the pager come by pointer, and
// a failed page is handled in pageFailed.
func (p *pager) list(ctx context.Context, opts *metav1.ListOptions) (out listed, err error) {
	if opts.Limit == 0 {
		opts.Limit = p.pageSize
	}
	rv, match := opts.ResourceVersion, opts.ResourceVersionMatch
	ctx, p.hint = listhint.With(ctx, p.itemFunc(), p.in.dropsManagedFields())
	if f := p.heldFunc(); f != nil {
		p.hint.OfferHeld(f)
	}
	defer func() {
		p.hint.Close()
		out.pagesUnused = p.hint.Unused()
	}()
	for {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		page, err := p.fetch(ctx, opts)
		if err != nil {
			if opts.Continue == "" {
				return out, err
			}
			switch p.pageFailed(ctx, err) {
			case stepRetryPage:
				out.pageRetries++
				continue
			case stepListWhole:
				// The first page's options, without paging.
				opts.Limit, opts.Continue = 0, ""
				opts.ResourceVersion, opts.ResourceVersionMatch = rv, match
				return p.listUnpaged(ctx, opts, out)
			}
			return out, err
		}
		p.retry.succeeded()
		next, err := out.addPage(page, p)
		if err != nil || next == "" {
			return out, err
		}
		opts.Continue = next
		// A continued LIST must not repeat the resourceVersion.
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
		out.paged = true
	}
}

// fetch makes one LIST call with opts. A ListerWatcher that answers with
// neither a list (nil, or a nil pointer) nor an error has failed: the call
// returns errNilList, which fails the LIST like any other error.
func (p *pager) fetch(ctx context.Context, opts *metav1.ListOptions) (runtime.Object, error) {
	page, err := p.lister.ListWithContext(ctx, *opts)
	if err == nil && isNilObject(page) {
		return nil, errNilList
	}
	return page, err
}

// pageFailed says what follows a continued page that failed with err:
// stepRetryPage once the retry's wait is over, stepListWhole after an
// expired continue token, anything else to fail the LIST.
func (p *pager) pageFailed(ctx context.Context, err error) step {
	o := classify(atListPage, err, facts{})
	if o.next == stepRetryPage && !p.retry.wait(ctx, o.retryAfter) {
		return stepFail
	}
	return o.next
}

// listUnpaged is the fallback after an expired continue token: one LIST
// with opts, the gathering started over, keeping only what partial says of
// the pages so far.
func (p *pager) listUnpaged(ctx context.Context, opts *metav1.ListOptions, partial listed) (listed, error) {
	page, err := p.fetch(ctx, opts)
	out := listed{paged: partial.paged, pageRetries: partial.pageRetries}
	if err != nil {
		return out, err
	}
	_, err = out.addPage(page, p)
	return out, err
}

// addPage appends the items of page and returns its continue token. The
// first page sets the resourceVersion and sizes the item slice from the
// server's remaining-item count. A sharded Reflector's page is checked by
// p's shard check, and the items left are then prepared by p's intake
// (see intake.page), so a copy of a held object is dropped with its page.
func (l *listed) addPage(page runtime.Object, p *pager) (string, error) {
	if gvk, table := unsupportedTableList(page); table {
		return "", fmt.Errorf("unsupported list of kind %v: the Reflector cannot store Table objects", gvk)
	}
	m, err := meta.ListAccessor(page)
	if err != nil {
		// client-go's pager says the same.
		return "", fmt.Errorf("returned object must be a list: %w", err)
	}
	if l.items == nil {
		l.resourceVersion = m.GetResourceVersion()
		l.items = make([]interface{}, 0, initialCapacity(page, m))
	}
	from := len(l.items)
	owned, held := p.hint.TakeOwned(page)
	l.items, err = listitems.AppendOwned(l.items, page, owned, held, goruntime.GOMAXPROCS(0))
	if err != nil {
		return "", fmt.Errorf("unable to understand list result %T: %w", page, err)
	}
	l.notDecoded += countHeld(held)
	l.reused += countHeld(held)
	if p.shard != nil {
		if held, err = l.checkShard(p.shard, page, m, from, held); err != nil {
			return "", err
		}
	}
	if p.in != nil && !p.hint.TookItems(page) {
		l.reused += p.in.page(l.items[from:], p.reuse, held)
	}
	if err := p.in.packAll(l.items[from:]); err != nil {
		return "", err
	}
	return m.GetContinue(), nil
}

// checkShard checks a page whose items start at from against shard, and
// returns held (its stand-ins) filtered as the items are.
func (l *listed) checkShard(shard *shardCheck, page runtime.Object, m metav1.ListInterface, from int, held []any) ([]any, error) {
	if err := shard.page(page, m); err != nil {
		return held, err
	}
	before := shard.dropped
	items, held, err := shard.items(l.items, from, held)
	l.items = items
	l.shardDropped += shard.dropped - before
	l.shardIgnored = l.shardIgnored || shard.ignored
	return held, err
}

func initialCapacity(page runtime.Object, m metav1.ListInterface) int {
	n := meta.LenList(page)
	if rest := m.GetRemainingItemCount(); rest != nil && *rest > 0 && *rest < 1<<24 {
		n += int(*rest)
	}
	return n
}

var tableGVKs = map[string]bool{
	metav1.SchemeGroupVersion.WithKind("Table").String():      true,
	metav1beta1.SchemeGroupVersion.WithKind("Table").String(): true,
}

// unsupportedTableList: the server answered in Table form (a client asked
// for it with an Accept header), which a Reflector cannot store.
func unsupportedTableList(o runtime.Object) (string, bool) {
	u, ok := o.(*unstructured.UnstructuredList)
	if !ok {
		return "", false
	}
	gvk := u.GroupVersionKind().String()
	return gvk, tableGVKs[gvk]
}

// defaultPageRetries is how many times in a row one page of a paginated
// LIST is retried after transient errors before the LIST fails.
const defaultPageRetries = 6

// pageRetry decides whether, and after how long, a page of a paginated
// LIST that failed is asked for again from its continue token, so that a
// large initial list survives a hiccup near its end without starting over.
// It belongs to one LIST and to the goroutine running it; its randomness
// comes from its own generator, made at the first failure. The zero value
// never retries.
type pageRetry struct {
	clock clock.Clock
	// limit is how many consecutive failures of one page are retried.
	limit int
	// cfg is the Reflector's backoff configuration, which nothing changes
	// after construction, so the LIST's goroutine may read it.
	cfg  *wait.Backoff
	seed [2]uint64
	rand *rand.Rand
	// streak is the backoff of the current run of failures; nil when the
	// last page succeeded.
	streak *backoff
	fails  int
}

// newPageRetry returns the page retry policy for one LIST (the zero value
// when page retries are turned off). Only the loop goroutine may call it.
func (r *Reflector) newPageRetry() pageRetry {
	if r.pageRetries < 0 {
		return pageRetry{}
	}
	return pageRetry{
		clock: realClock,
		limit: r.pageRetries,
		cfg:   &r.backoff.initial,
		seed:  [2]uint64{r.rand.Uint64(), r.rand.Uint64()},
	}
}

// wait blocks for the delay before a page that failed is asked for again:
// the next backoff delay, or retryAfter if that is longer. It returns
// false, without waiting, when the page failed too often, and false when
// ctx ends during the wait. Whether a failure may be retried at all is
// classify's to say (stepRetryPage).
func (p *pageRetry) wait(ctx context.Context, retryAfter time.Duration) bool {
	if p.fails >= p.limit || ctx.Err() != nil {
		return false
	}
	if p.streak == nil {
		p.streak = newBackoff(*p.cfg, 0)
	}
	if p.rand == nil {
		p.rand = rand.New(rand.NewPCG(p.seed[0], p.seed[1]))
	}
	p.fails++
	return sleepOn(ctx, p.clock, p.streak.delay(p.clock.Now(), p.rand.Float64(), retryAfter))
}

// succeeded ends the current run of failures.
func (p *pageRetry) succeeded() {
	p.streak, p.fails = nil, 0
}

// isTransientListError: a LIST page failed in a way that says nothing about
// the request itself (the server was overloaded, restarting or unreachable,
// or the connection broke), so the same request may well succeed later.
func isTransientListError(err error) bool {
	if isRVUnavailable(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var netErr net.Error
	switch {
	case utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	case apierrors.IsTooManyRequests(err), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return true
	}
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code >= 500
}
