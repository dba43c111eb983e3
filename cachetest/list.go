package cachetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// List is ListWithContext without a context.
func (r *Resource) List(opts metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), opts)
}

// ListWithContext lists the resource as kube-apiserver (with its watch
// cache, unless Options.NoWatchCache) does:
//
//   - resourceVersion "": the newest state, paged by Limit.
//   - "0": any state: from the watch cache (Options.CacheLag revisions
//     old, all in one page whatever the Limit), or, with NoWatchCache, the
//     newest state, paged.
//   - a number N with resourceVersionMatch Exact, or with no match and a
//     Limit (the legacy rule): the state at N, paged; 410 Expired if N was
//     compacted.
//   - a number N otherwise (NotOlderThan): with a Limit, the newest state,
//     paged; without, the watch cache's state, caught up to N if it lagged
//     behind (with NoWatchCache, the newest state).
//
// A number beyond the newest resourceVersion waits up to three seconds on
// the clock for it, then fails with 504 "Too large resource version".
// Continue tokens are opaque; each page of a list reads the snapshot of
// the first page, and a token whose snapshot was compacted gets 410
// Expired carrying an inconsistent-continue token. Items come in key order
// ("namespace/name").
//
// A ShardSelector (shardRange terms joined by "||", parsed by
// shard.Parse) keeps, on top of the label and field selectors, the
// objects whose metadata.uid or metadata.namespace hashes into its
// ranges; each page it filtered has no remainingItemCount and echoes the
// selector in ListMeta.ShardInfo as kube-apiserver does (term by term in
// its canonical form, which is the request's text when written as
// Shard.String writes it; Unstructured lists get no ShardInfo, as custom
// resources' do not). A malformed selector is 400 BadRequest.
func (r *Resource) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	c := r.call(VerbList, "", "")
	if err := r.srv.begin(ctx, c); err != nil {
		return nil, err
	}
	in, p, err := r.parseOptions(opts, false)
	if err != nil {
		return nil, err
	}
	if in.Continue != "" {
		return r.listContinued(in, p)
	}
	rev, paged, err := r.listRev(ctx, c, in)
	if err != nil {
		return nil, err
	}
	limit := in.Limit
	if !paged {
		limit = 0
	}
	s := r.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Lists++
	return r.pageLocked(p, rev, "", limit)
}

// listRev decides the revision a first page reads and whether the limit
// applies, following the rules of ListWithContext.
func (r *Resource) listRev(ctx context.Context, c call, in internalversion.ListOptions) (uint64, bool, error) {
	s := r.srv
	rv := in.ResourceVersion
	var n uint64
	if rv != "" && rv != "0" {
		var err error
		if n, err = strconv.ParseUint(rv, 10, 64); err != nil {
			return 0, false, errInvalidRV(r.t.gr, rv, err)
		}
		if err := s.waitFresh(ctx, c, n); err != nil {
			return 0, false, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cache := !s.opts.NoWatchCache
	switch {
	case rv == "":
		return s.hist.rev, true, nil
	case rv == "0":
		if cache {
			return s.cacheRev(), false, nil
		}
		return s.hist.rev, true, nil
	case in.ResourceVersionMatch == metav1.ResourceVersionMatchExact || in.ResourceVersionMatch == "" && in.Limit > 0:
		if n < s.hist.compacted {
			s.stats.Expired++
			return 0, false, errListTooOld()
		}
		return n, true, nil
	case in.Limit > 0 || !cache:
		return s.hist.rev, true, nil
	}
	return max(n, s.cacheRev()), false, nil
}

// listContinued serves a page after the first.
func (r *Resource) listContinued(in internalversion.ListOptions, p predicate) (runtime.Object, error) {
	if in.ResourceVersion != "" {
		return nil, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	tok, err := decodeContinue(in.Continue, r.t.id)
	if err != nil {
		return nil, err
	}
	s := r.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	rev := tok.RV
	if rev == 0 {
		rev = s.hist.rev // an inconsistent continuation reads the newest state
	}
	if rev < s.hist.compacted {
		s.stats.Expired++
		return nil, errContinueExpired(encodeContinue(r.t.id, 0, tok.Start))
	}
	return r.pageLocked(p, rev, tok.Start, in.Limit)
}

// pageLocked builds the page of objects after key start at revision rev.
// Like etcd, it fills the page with up to limit matching objects and
// returns a continue token when keys remain in the namespace, even if none
// of them would match.
func (r *Resource) pageLocked(p predicate, rev uint64, start string, limit int64) (runtime.Object, error) {
	var all []keyed
	for _, kv := range r.srv.hist.snapshot(r.t.id, rev) {
		if p.inNamespace(kv.obj) {
			all = append(all, kv)
		}
	}
	i := sort.Search(len(all), func(i int) bool { return all[i].key > start })
	var items []runtime.Object
	for ; i < len(all) && (limit <= 0 || int64(len(items)) < limit); i++ {
		if p.matches(all[i].obj) {
			items = append(items, all[i].obj)
		}
	}
	var cont string
	var remaining *int64
	if i < len(all) {
		cont = encodeContinue(r.t.id, rev, all[i-1].key)
		if !p.filters() {
			n := int64(len(all) - i)
			remaining = &n
		}
	}
	list, err := r.t.newList(items, formatRV(rev), cont, remaining)
	if err == nil {
		p.stampShard(list)
	}
	return list, err
}

// continueToken is the content of a continue token: the resource, the
// snapshot revision (0: the newest state) and the last key returned.
type continueToken struct {
	Version  string `json:"v"`
	Resource string `json:"r"`
	RV       uint64 `json:"rv"`
	Start    string `json:"start"`
}

const continueVersion = "cachetest/v1"

func encodeContinue(resource string, rev uint64, start string) string {
	b, _ := json.Marshal(continueToken{Version: continueVersion, Resource: resource, RV: rev, Start: start})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s, resource string) (continueToken, error) {
	var tok continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &tok)
	}
	if err == nil && (tok.Version != continueVersion || tok.Resource != resource) {
		err = fmt.Errorf("not a token of this server for %s", resource)
	}
	if err != nil {
		return tok, apierrors.NewBadRequest(fmt.Sprintf("continue key is not valid: %v", err))
	}
	return tok, nil
}
