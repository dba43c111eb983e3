package main

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// expectingErrors returns ctx with a logger (klog's, named name) that logs
// errors at info level, marked as expected: for a replica the demo makes
// fail on purpose, whose errors are the demonstration, not a problem.
func expectingErrors(ctx context.Context, name string) context.Context {
	base := klog.FromContext(ctx).WithName(name)
	return klog.NewContext(ctx, logr.New(expectedSink{base.GetSink()}))
}

// expectedSink passes everything to sink, errors as info lines that say
// they were expected.
type expectedSink struct{ logr.LogSink }

func (s expectedSink) Error(err error, msg string, kv ...any) {
	s.LogSink.Info(0, msg+" (expected: this replica demonstrates the refusal)", append(kv, "err", err)...)
}

func (s expectedSink) WithValues(kv ...any) logr.LogSink {
	return expectedSink{s.LogSink.WithValues(kv...)}
}

func (s expectedSink) WithName(name string) logr.LogSink {
	return expectedSink{s.LogSink.WithName(name)}
}
