package listhint

import (
	"context"
	"testing"
	"testing/synctest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func opts(token string) metav1.ListOptions {
	return metav1.ListOptions{Limit: 500, Continue: token}
}

// blocking is a Fetch that returns list once release is closed, or the
// context's error once it ends; started records each call.
func blocking(list runtime.Object, release <-chan struct{}, started chan<- metav1.ListOptions, opts metav1.ListOptions) Fetch {
	return func(ctx context.Context) (runtime.Object, error) {
		started <- opts
		select {
		case <-release:
			return list, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func TestTakeReturnsThePageRequestedAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, h := With(context.Background(), nil, false)
		defer h.Close()
		if From(ctx) != h {
			t.Fatal("the context does not carry the hint")
		}
		release, started := make(chan struct{}), make(chan metav1.ListOptions, 4)
		want := &metav1.PartialObjectMetadataList{}
		h.Ahead(opts("a"), blocking(want, release, started, opts("a")))
		h.Ahead(opts("a"), blocking(want, release, started, opts("a")))
		synctest.Wait()
		if len(started) != 1 {
			t.Fatalf("%d calls for one page asked ahead twice, want 1", len(started))
		}
		close(release)
		got, err, ok := h.Take(ctx, opts("a"))
		if !ok || err != nil || got != want {
			t.Fatalf("Take = %v, %v, %v; want the page fetched ahead", got, err, ok)
		}
		if _, _, ok := h.Take(ctx, opts("b")); ok {
			t.Fatal("Take found a page nobody asked for")
		}
	})
}

func TestAtMostMaxAheadPagesAreRequested(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, h := With(context.Background(), nil, false)
		release, started := make(chan struct{}), make(chan metav1.ListOptions, 8)
		for _, tok := range []string{"a", "b", "c", "d"} {
			h.Ahead(opts(tok), blocking(nil, release, started, opts(tok)))
		}
		synctest.Wait()
		if len(started) != MaxAhead {
			t.Fatalf("%d pages requested ahead, want %d", len(started), MaxAhead)
		}
		h.Close() // cancels the calls and waits for them
	})
}

// A page whose request came while MaxAhead were ahead is requested as
// soon as the oldest of them is taken: a chain of pages whose metadata
// arrives faster than the caller takes them keeps its pipeline.
func TestAPageHeldBackIsRequestedWhenOneIsTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, h := With(context.Background(), nil, false)
		defer h.Close()
		release, started := make(chan struct{}), make(chan metav1.ListOptions, 8)
		for _, tok := range []string{"a", "b", "c"} {
			h.Ahead(opts(tok), blocking(nil, release, started, opts(tok)))
		}
		synctest.Wait()
		if len(started) != MaxAhead {
			t.Fatalf("%d pages requested ahead, want %d", len(started), MaxAhead)
		}
		close(release)
		if _, err, ok := h.Take(ctx, opts("a")); !ok || err != nil {
			t.Fatalf("Take(a) = %v, %v", err, ok)
		}
		synctest.Wait()
		if len(started) != MaxAhead+1 {
			t.Fatalf("%d pages requested after one was taken, want %d", len(started), MaxAhead+1)
		}
		first := map[string]bool{(<-started).Continue: true, (<-started).Continue: true}
		if !first["a"] || !first["b"] {
			t.Fatalf("first requested %v, want a and b", first)
		}
		if got := (<-started).Continue; got != "c" {
			t.Fatalf("then requested %q, want c", got)
		}
		for _, tok := range []string{"b", "c"} {
			if _, err, ok := h.Take(ctx, opts(tok)); !ok || err != nil {
				t.Fatalf("Take(%s) = %v, %v", tok, err, ok)
			}
		}
	})
}

func TestAnotherPageDropsThoseAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, h := With(context.Background(), nil, false)
		defer h.Close()
		cancelled := make(chan error, 1)
		h.Ahead(opts("a"), func(ctx context.Context) (runtime.Object, error) {
			<-ctx.Done()
			cancelled <- ctx.Err()
			return nil, ctx.Err()
		})
		// The caller retried another page instead: the one ahead is cancelled.
		if _, _, ok := h.Take(ctx, metav1.ListOptions{Limit: 500}); ok {
			t.Fatal("Take answered a page that was not requested ahead")
		}
		synctest.Wait()
		select {
		case err := <-cancelled:
			if err == nil {
				t.Fatal("no cancellation")
			}
		default:
			t.Fatal("the page ahead was not cancelled")
		}
	})
}

func TestCloseCancelsAndJoins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, h := With(context.Background(), nil, false)
		returned := false
		h.Ahead(opts("a"), func(ctx context.Context) (runtime.Object, error) {
			<-ctx.Done()
			returned = true
			return nil, ctx.Err()
		})
		h.Close()
		if !returned {
			t.Fatal("Close returned before the call ahead")
		}
		h.Ahead(opts("b"), func(context.Context) (runtime.Object, error) {
			t.Error("a closed hint requested a page")
			return nil, nil
		})
	})
}

func TestItemizedListsAreTold(t *testing.T) {
	var nilHint *Hint
	if nilHint.Item() != nil || nilHint.TookItems(nil) {
		t.Fatal("a nil hint offers something")
	}
	_, plain := With(context.Background(), nil, false)
	l := &metav1.PartialObjectMetadataList{}
	plain.Itemized(l)
	if plain.TookItems(l) {
		t.Fatal("a hint without an item function says items took it")
	}
	plain.Close()
	_, h := With(context.Background(), func(runtime.Object) {}, false)
	h.Itemized(l)
	if !h.TookItems(l) {
		t.Fatal("an itemized list is not told")
	}
	if h.TookItems(l) {
		t.Fatal("a list told once is told again: the hint keeps it")
	}
	h.Itemized(l)
	h.Close()
	if h.TookItems(l) {
		t.Fatal("a closed hint still holds its lists")
	}
}

// Pages requested ahead and never used are counted: dropped when the
// caller went its own way, dropped at Close, or taken while the taker's
// context ended; pages used are not.
func TestUnusedPagesAreCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, h := With(context.Background(), nil, false)
		quick := func(context.Context) (runtime.Object, error) { return &metav1.List{}, nil }
		slow := func(ctx context.Context) (runtime.Object, error) { <-ctx.Done(); return nil, ctx.Err() }
		h.Ahead(opts("a"), quick)
		if _, err, ok := h.Take(ctx, opts("a")); !ok || err != nil {
			t.Fatalf("Take(a) = %v, %v", err, ok)
		}
		h.Ahead(opts("b"), slow)
		ended, cancel := context.WithCancel(ctx)
		cancel()
		if _, err, ok := h.Take(ended, opts("b")); !ok || err == nil {
			t.Fatalf("Take(b) with its context ended = %v, %v", err, ok)
		}
		h.Ahead(opts("c"), slow)
		h.Take(ctx, metav1.ListOptions{Limit: 500}) // another page: c is dropped
		h.Ahead(opts("d"), slow)
		h.Close() // d is dropped
		if got := h.Unused(); got != 3 {
			t.Fatalf("Unused() = %d, want 3 (b, c, d)", got)
		}
	})
}

// TakeOwned gives a list's owned items once, and keeps no more than the
// MaxAhead+1 latest reports besides, whether or not the list taken was
// reported.
func TestTakeOwnedForgetsWhatIsNotTaken(t *testing.T) {
	_, h := With(context.Background(), nil, false)
	defer h.Close()
	lists := make([]*metav1.List, 6)
	for i := range lists {
		lists[i] = &metav1.List{}
		h.Owned(lists[i], []runtime.Object{lists[i]}, nil)
	}
	if got, _ := h.TakeOwned(lists[1]); len(got) != 1 || got[0] != lists[1] {
		t.Fatalf("TakeOwned(lists[1]) = %v", got)
	}
	if a, _ := h.TakeOwned(lists[0]); a != nil {
		t.Fatal("a report older than the MaxAhead+1 latest is still there")
	}
	if b, _ := h.TakeOwned(lists[1]); b != nil {
		t.Fatal("a report older than the MaxAhead+1 latest, or the list taken, is still there")
	}
	h.TakeOwned(&metav1.List{}) // never reported: keeps the MaxAhead+1 latest
	if n := len(h.owned); n != MaxAhead+1 {
		t.Fatalf("%d reports kept after a list never reported, want %d", n, MaxAhead+1)
	}
	if l, _ := h.TakeOwned(lists[5]); l == nil {
		t.Fatal("the latest report was dropped")
	}
}

// TestHeldStandInsTravelWithTheirList: what Owned is told stood in for
// items comes back with the list from TakeOwned; HeldFunc is what was
// offered, and nothing on a nil hint.
func TestHeldStandInsTravelWithTheirList(t *testing.T) {
	_, h := With(context.Background(), nil, false)
	defer h.Close()
	if h.HeldFunc() != nil || (*Hint)(nil).HeldFunc() != nil {
		t.Fatal("a lookup offered before any was")
	}
	h.OfferHeld(func(string, string, string) (any, bool) { return "x", true })
	if f := h.HeldFunc(); f == nil {
		t.Fatal("the lookup offered is not there")
	} else if v, ok := f("", "", ""); v != "x" || !ok {
		t.Fatal("not the lookup offered")
	}
	list := &metav1.List{}
	h.Owned(list, []runtime.Object{nil, list}, []any{"stand-in", nil})
	items, held := h.TakeOwned(list)
	if len(items) != 2 || items[1] != list || len(held) != 2 || held[0] != "stand-in" {
		t.Fatalf("TakeOwned gave %v, %v", items, held)
	}
}

// A report with stand-ins is never forgotten for being old: its list
// could not be read without it.
func TestTakeOwnedKeepsReportsWithStandIns(t *testing.T) {
	_, h := With(context.Background(), nil, false)
	defer h.Close()
	held := &metav1.List{}
	h.Owned(held, []runtime.Object{nil}, []any{"stand-in"})
	for range 2 * MaxAhead {
		other := &metav1.List{}
		h.Owned(other, []runtime.Object{other}, nil)
		h.TakeOwned(&metav1.List{})
	}
	if _, got := h.TakeOwned(held); len(got) != 1 || got[0] != "stand-in" {
		t.Fatalf("the report with stand-ins was forgotten: %v", got)
	}
}
