package canonjson

import "unsafe"

// unsafeString views b as a string without copying; the callers only read it
// for the length of the call.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
