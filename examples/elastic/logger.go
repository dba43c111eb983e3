package main

import (
	"context"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// replicaLogger returns ctx with a logger (klog's, named after the
// replica) for everything the replica runs: its ring's API calls and its
// informer. Once dead is set (the replica was killed), errors are logged
// at info level, marked as expected: a call in flight when the line went
// silent fails, which is the demonstration, not a problem.
func replicaLogger(ctx context.Context, name string, dead *atomic.Bool) context.Context {
	base := klog.FromContext(ctx).WithName("replica-" + name)
	return klog.NewContext(ctx, logr.New(killedSink{LogSink: base.GetSink(), dead: dead}))
}

type killedSink struct {
	logr.LogSink
	dead *atomic.Bool
}

func (s killedSink) Error(err error, msg string, kv ...any) {
	if s.dead.Load() {
		s.LogSink.Info(0, msg+" (expected: this replica was killed, its connection is silent)", append(kv, "err", err)...)
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s killedSink) WithValues(kv ...any) logr.LogSink {
	return killedSink{LogSink: s.LogSink.WithValues(kv...), dead: s.dead}
}

func (s killedSink) WithName(name string) logr.LogSink {
	return killedSink{LogSink: s.LogSink.WithName(name), dead: s.dead}
}
