package main

import (
	"context"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// replicaLogger returns ctx with a logger (klog's, named after the
// replica) for everything the replica runs: its ring's API calls and its
// informer. Once expected is set (the replica was killed, say), errors are
// logged at info level, marked as expected with why: a call in flight
// when the line went silent fails, which is the demonstration, not a
// problem.
func replicaLogger(ctx context.Context, name string, expected *atomic.Bool, why string) context.Context {
	base := klog.FromContext(ctx).WithName("replica-" + name)
	return klog.NewContext(ctx, logr.New(expectedSink{LogSink: base.GetSink(), expected: expected, why: why}))
}

type expectedSink struct {
	logr.LogSink
	expected *atomic.Bool
	why      string
}

func (s expectedSink) Error(err error, msg string, kv ...any) {
	if s.expected.Load() {
		s.LogSink.Info(0, msg+" (expected: "+s.why+")", append(kv, "err", err)...)
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s expectedSink) WithValues(kv ...any) logr.LogSink {
	return expectedSink{LogSink: s.LogSink.WithValues(kv...), expected: s.expected, why: s.why}
}

func (s expectedSink) WithName(name string) logr.LogSink {
	return expectedSink{LogSink: s.LogSink.WithName(name), expected: s.expected, why: s.why}
}
