// Package lean holds the mechanics of lean objects: what makes the
// objects a Reflector stores take less memory. The root package keeps the
// policy (its intake decides which objects get which step, in what order,
// and which stores allow what) and the options that turn them on.
//
//   - Table and its Share replace an object's strings, byte slices and
//     (optionally) whole maps by canonical copies the table holds, so
//     equal values across objects are held once (ShareStrings,
//     ShareMaps). A Table belongs to one Reflector; it is safe for
//     concurrent use, though its Reflector uses it from one goroutine at
//     a time.
//   - Adopt points a changed object's values at the equal ones of the
//     version the store holds (part of ReuseHeldObjects).
//   - DropManagedFields removes an object's managedFields.
//
// Each of them changes the object it is given in place: the caller owns
// that object and no one else may read it meanwhile. Values are only ever
// replaced by equal ones; once shared they must not be written to, as
// cached objects never are. Reads of Go's runtime representation go
// through internal/repr; the walks here use unsafe only for offsets and
// pointers that reflect reports.
package lean
