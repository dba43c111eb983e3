package cachetest

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kreflector/cache/shard"
)

// Sharded LIST and WATCH (KEP-5866) as kube-apiserver 1.37 serves them
// with its ShardedListAndWatch feature gate on: ListOptions.ShardSelector
// keeps the objects whose metadata.uid or metadata.namespace hashes
// (64-bit FNV-1a) into its ranges, and a LIST it filtered echoes it in
// ListMeta.ShardInfo.

// SetShardedListAndWatch turns the server's ShardedListAndWatch feature
// gate on or off (Options.DisableShardedListAndWatch sets it at the
// start; it is on by default). Off, requests ignore their shardSelector.
// The setting applies to the requests that begin after the call; open
// watches keep the filtering they were opened with, as a real server's
// gates change only when it restarts, which ends every watch: call
// CloseWatches to play that part. Safe for concurrent use.
func (s *Server) SetShardedListAndWatch(enabled bool) { s.shardingOff.Store(!enabled) }

// parseShardSelector reads a request's shardSelector: none for "" or with
// the gate off, else the shard and its echo, or 400 BadRequest carrying
// the parse error's text. (kube-apiserver 1.37.2 answers 500 there, its
// parse error not being a status; cachetest answers as the API means it.)
func (s *Server) parseShardSelector(sel string) (shard.Shard, string, error) {
	if sel == "" || s.shardingOff.Load() {
		return shard.Shard{}, "", nil
	}
	sh, err := shard.Parse(sel)
	if err != nil {
		return shard.Shard{}, "", apierrors.NewBadRequest(fmt.Sprintf("invalid shard selector: %v", err))
	}
	return sh, shardEcho(sel), nil
}

// shardEcho is sel as kube-apiserver echoes it: not the request's text but
// the selector it parsed, written back term by term in the request's
// order, each as shardRange(<key>, '<start>', '<end>'), joined by " || ".
// A selector written that way (as Shard.String writes one) comes back as
// it was sent. sel must be one shard.Parse accepts, so that "||" only
// separates terms and each term is a shard of its own.
func shardEcho(sel string) string {
	terms := strings.Split(sel, "||")
	for i, term := range terms {
		one, err := shard.Parse(term)
		if err != nil {
			return sel // not reached for a selector shard.Parse accepts
		}
		terms[i] = one.String()
	}
	return strings.Join(terms, " || ")
}

// inShard says whether obj is in the predicate's shard (true when there
// is none).
func (p predicate) inShard(obj runtime.Object) bool {
	if p.shard.IsZero() {
		return true
	}
	ok, err := p.shard.Contains(obj)
	return err == nil && ok
}

// stampShard sets list's ShardInfo to the echo when p has a shard and the
// list type carries one, as kube-apiserver does: typed lists do, but
// UnstructuredList does not implement metav1.ShardedListInterface, so a
// sharded list of Unstructured objects (a custom resource's) has none.
func (p predicate) stampShard(list runtime.Object) {
	if p.shard.IsZero() {
		return
	}
	if sl, ok := list.(metav1.ShardedListInterface); ok {
		sl.SetShardInfo(&metav1.ShardInfo{Selector: p.shardEcho})
	}
}
