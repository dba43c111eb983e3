package cache

import "fmt"

// ReflectorConfigurable is implemented by this package's shared informers:
// it gives the informer's Reflector the options beyond client-go
// (Metrics, OnHealthChange, UseWatchList, StallWindow, Name, ...).
type ReflectorConfigurable interface {
	// SetReflectorOptions sets the options the informer's Reflector is
	// built with; it fails once the informer has started. The informer
	// still decides ResyncPeriod (its resync check period); Logger,
	// TypeDescription, MinWatchTimeout and WatchErrorHandler are the
	// informer's (run context's logger, ObjectDescription, none, the
	// handler set with SetWatchErrorHandler) where o leaves them unset.
	// Name, which also labels the handler metrics, is used as given;
	// unset, the informer's name is: its Identifier's name and resource
	// if it has one, else "SharedIndexInformer <type>", followed by " #2",
	// " #3", ... when another running informer of this package already
	// uses it, so that informers sharing a metrics provider never share
	// series. It also fails, changing nothing, if o.Shard points at the
	// zero Shard (an error wrapping ErrInvalidShard): a failed
	// ReplicaShard's result, say.
	SetReflectorOptions(o ReflectorOptions) error
}

var _ ReflectorConfigurable = &sharedIndexInformer{}

// SetReflectorOptions implements ReflectorConfigurable.
func (s *sharedIndexInformer) SetReflectorOptions(o ReflectorOptions) error {
	if err := checkShardOption(o, "SetReflectorOptions"); err != nil {
		return err
	}
	return s.beforeStart(func() { s.setReflectorOptions(o) })
}

// setReflectorOptions sets o as the Reflector's options, and the store
// they ask for (see ReflectorOptions.Compact). Before Run only.
func (s *sharedIndexInformer) setReflectorOptions(o ReflectorOptions) {
	s.reflectorOptions = &o
	s.indexer.storeFor(o.Compact)
}

// checkShardOption fails, naming fn, if o.Shard points at the zero Shard,
// which NewReflectorWithOptions refuses (see ReflectorOptions.Shard).
func checkShardOption(o ReflectorOptions, fn string) error {
	if o.Shard != nil && o.Shard.IsZero() {
		return fmt.Errorf("%w: %s with ReflectorOptions.Shard pointing at the zero Shard; make one with ReplicaShard, NewShard or ParseShard and check their error", ErrInvalidShard, fn)
	}
	return nil
}

// reflectorOptionsNamed returns a function that lays the options set by
// SetReflectorOptions (if any) over those the controller computed and
// names the Reflector name. s.mu is held.
func (s *sharedIndexInformer) reflectorOptionsNamed(name string) func(*ReflectorOptions) {
	user := s.reflectorOptions
	return func(o *ReflectorOptions) {
		defer func() { o.Name = name }()
		if user == nil {
			return
		}
		merged := *user
		merged.ResyncPeriod = o.ResyncPeriod
		if merged.Logger == nil {
			merged.Logger = o.Logger
		}
		if merged.TypeDescription == "" {
			merged.TypeDescription = o.TypeDescription
		}
		if merged.MinWatchTimeout == 0 {
			merged.MinWatchTimeout = o.MinWatchTimeout
		}
		if merged.WatchErrorHandler == nil {
			merged.WatchErrorHandler = o.WatchErrorHandler
		}
		*o = merged
	}
}
