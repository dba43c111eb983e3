package cache

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
	SetReflectorOptions(o ReflectorOptions) error
}

var _ ReflectorConfigurable = &sharedIndexInformer{}

// SetReflectorOptions implements ReflectorConfigurable.
func (s *sharedIndexInformer) SetReflectorOptions(o ReflectorOptions) error {
	return s.beforeStart(func() { s.reflectorOptions = &o })
}

// mergeReflectorOptions returns a function that lays the options set by
// SetReflectorOptions (if any) over those the controller computed.
func (s *sharedIndexInformer) mergeReflectorOptions() func(*ReflectorOptions) {
	user := s.reflectorOptions
	if user == nil {
		return nil
	}
	return func(o *ReflectorOptions) {
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
