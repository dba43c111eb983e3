package cache

import (
	"fmt"
	"runtime/debug"
)

// ListerWatcherPanic is the value a Reflector panics with when a call of
// its ListerWatcher (List, Watch or their context forms) panicked. The
// call runs in a goroutine of its own (so that the Reflector can stop
// waiting for a call that ignores its context) and the panic is raised
// again in the goroutine that waits for it, with this value: Value is
// what the call panicked with, and Stack the stack of the call's
// goroutine when it panicked, which shows the frame that panicked (the
// stack of the panic raised again does not). Its Error, which is what a
// crash prints and what utilruntime.HandleCrash logs, gives both; it
// unwraps to Value when Value is an error, so errors.As finds a
// runtime.Error. client-go's Reflector panics with the value itself: a
// Watch's panic goes up its own stack, and a LIST's, made in a goroutine
// as ours are, is raised again without the stack (docs/compatibility.md).
type ListerWatcherPanic struct {
	// Value is the value the ListerWatcher call panicked with.
	Value any
	// Stack is debug.Stack of the call's goroutine, taken as it panicked.
	Stack []byte
}

// Error is "panic in a ListerWatcher call: <Value>" followed by the
// call's stack, from the line after "goroutine N [running]:".
func (p *ListerWatcherPanic) Error() string {
	return fmt.Sprintf("panic in a ListerWatcher call: %v\n\n%s", p.Value, p.Stack)
}

// Unwrap returns Value if it is an error, nil otherwise.
func (p *ListerWatcherPanic) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

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
	panicked *ListerWatcherPanic
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
			o.panicked = &ListerWatcherPanic{Value: p, Stack: debug.Stack()}
		}
	}()
	o.value, o.err = fn()
	return o
}

// giveUp tells the goroutine that nobody will receive its outcome.
func (p *pendingCall[T]) giveUp() { close(p.abandon) }

// result unpacks an outcome received from done, re-raising a panic of the
// call in the waiting goroutine (as a *ListerWatcherPanic).
func (o callOutcome[T]) result() (T, error) {
	if o.panicked != nil {
		panic(o.panicked)
	}
	return o.value, o.err
}
