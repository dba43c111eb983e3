package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
)

// informer is a small custom informer built from parts: our Reflector
// fills client-go's DeltaFIFO, and one loop pops the deltas into an indexer
// (the informer's cache) and into event handlers, in order. It is what
// client-go's SharedInformer does inside, with kreflector underneath.
type informer struct {
	reflector *cache.Reflector
	fifo      *clientgocache.DeltaFIFO
	indexer   clientgocache.Indexer
	handler   clientgocache.ResourceEventHandler
}

// newInformer returns an informer over lw for objects like objType that
// calls handler from one goroutine; Run starts it.
func newInformer(lw cache.ListerWatcher, objType runtime.Object, handler clientgocache.ResourceEventHandler, opts cache.ReflectorOptions) *informer {
	keyFunc := clientgocache.DeletionHandlingMetaNamespaceKeyFunc
	indexer := clientgocache.NewIndexer(keyFunc, clientgocache.Indexers{clientgocache.NamespaceIndex: clientgocache.MetaNamespaceIndexFunc})
	fifo := clientgocache.NewDeltaFIFOWithOptions(clientgocache.DeltaFIFOOptions{
		KeyFunction:           keyFunc,
		KnownObjects:          indexer,
		EmitDeltaTypeReplaced: true,
	})
	return &informer{
		reflector: cache.NewReflectorWithOptions(lw, objType, fifo, opts),
		fifo:      fifo,
		indexer:   indexer,
		handler:   handler,
	}
}

// Run runs the Reflector and the processing loop until ctx ends, and
// returns once both have stopped. A handler error is reported on the
// returned error once ctx has ended; processing goes on meanwhile.
func (i *informer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { i.reflector.RunWithContext(ctx) })
	wg.Go(func() {
		<-ctx.Done()
		i.fifo.Close() // ends the Pop below
	})
	var errs []error
	for {
		_, err := i.fifo.Pop(i.process)
		if errors.Is(err, clientgocache.ErrFIFOClosed) {
			break
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// HasSynced reports whether the first state has been listed and handed to
// the handlers.
func (i *informer) HasSynced() bool {
	return i.reflector.HasSynced() && i.fifo.HasSynced()
}

// process applies one object's deltas to the indexer and the handlers.
func (i *informer) process(obj interface{}, isInInitialList bool) error {
	for _, d := range obj.(clientgocache.Deltas) {
		if err := i.apply(d, isInInitialList); err != nil {
			return fmt.Errorf("applying %s delta: %w", d.Type, err)
		}
	}
	return nil
}

func (i *informer) apply(d clientgocache.Delta, isInInitialList bool) error {
	if d.Type == clientgocache.Deleted {
		if err := i.indexer.Delete(d.Object); err != nil {
			return err
		}
		i.handler.OnDelete(d.Object)
		return nil
	}
	old, exists, err := i.indexer.Get(d.Object)
	if err != nil {
		return err
	}
	if exists {
		if err := i.indexer.Update(d.Object); err != nil {
			return err
		}
		i.handler.OnUpdate(old, d.Object)
		return nil
	}
	if err := i.indexer.Add(d.Object); err != nil {
		return err
	}
	i.handler.OnAdd(d.Object, isInInitialList)
	return nil
}
