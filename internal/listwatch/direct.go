package listwatch

import (
	"reflect"

	clientgocache "k8s.io/client-go/tools/cache"
)

// restList is the code of the LIST function of every ListWatch NewREST
// makes (one function literal: its closures share their code).
var restList = reflect.ValueOf(NewREST(REST{}, nil).ListWithContextFunc).Pointer()

// semantics is the type of client-go's ToListWatcherWithWatchListSemantics,
// which the factories (client-go's and ours) put around the ListWatch: it
// embeds it and adds only IsWatchListSemanticsUnSupported, so its LIST is
// the embedded ListWatch's own (see TestDirectThroughWatchListSemantics,
// which pins that shape).
var semantics = reflect.TypeOf(clientgocache.ToListWatcherWithWatchListSemantics(&clientgocache.ListWatch{}, nil))

// Direct says whether lw is a ListWatch NewREST made (or a copy of one),
// alone or inside client-go's ToListWatcherWithWatchListSemantics: its
// LIST calls reach REST's own LIST and return what it decoded to the
// caller, with no one else's code between that could read or change the
// list. A ListerWatcher wrapping one (a function of its own around
// ListWithContextFunc, another type) is not.
func Direct(lw any) bool {
	if v := reflect.ValueOf(lw); v.IsValid() && v.Type() == semantics && !v.IsNil() {
		lw = v.Elem().Field(0).Interface()
	}
	l, ok := lw.(*clientgocache.ListWatch)
	if !ok || l == nil || l.ListWithContextFunc == nil {
		return false
	}
	return reflect.ValueOf(l.ListWithContextFunc).Pointer() == restList
}
