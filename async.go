package cache

// pendingCall is a ListerWatcher call running in its own goroutine, so the
// Reflector can stop waiting for it when its context ends even if the call
// ignores the context. The goroutine exits as soon as the call returns: it
// hands the outcome to the waiter, or, if the waiter gave up, releases the
// result itself (for a watch: Stop).
type pendingCall[T any] struct {
	done    chan callOutcome[T]
	abandon chan struct{}
}

type callOutcome[T any] struct {
	value    T
	err      error
	panicked any
}

// startCall runs fn in a new goroutine. release, if not nil, is applied to
// a successful result nobody waits for any more.
func startCall[T any](fn func() (T, error), release func(T)) *pendingCall[T] {
	p := &pendingCall[T]{done: make(chan callOutcome[T]), abandon: make(chan struct{})}
	go func() {
		o := invoke(fn)
		select {
		case p.done <- o:
		case <-p.abandon:
			if release != nil && o.err == nil && o.panicked == nil {
				release(o.value)
			}
		}
	}()
	return p
}

func invoke[T any](fn func() (T, error)) (o callOutcome[T]) {
	defer func() {
		if p := recover(); p != nil {
			o.panicked = p
		}
	}()
	o.value, o.err = fn()
	return o
}

// giveUp tells the goroutine that nobody will receive its outcome.
func (p *pendingCall[T]) giveUp() { close(p.abandon) }

// result unpacks an outcome received from done, re-raising a panic of the
// call in the waiting goroutine.
func (o callOutcome[T]) result() (T, error) {
	if o.panicked != nil {
		panic(o.panicked)
	}
	return o.value, o.err
}
