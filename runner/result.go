package runner

import (
	"fmt"
	"reflect"
)

// Result returns a read-only tool's result as the type R its function
// returns, for the results of Runner.Run, Activation.RunTool and RunAll's
// outcomes, which are any because one table holds tools of many types:
//
//	profile, err := runner.Result[Profile](act.RunTool(ctx, "lookup_customer", args))
//
// An error is returned as is, with R's zero value. A result that is not an R
// gives a *ResultTypeError naming both types: R is the wrong type for the
// tool, which is a mistake in the caller, not in the call. A nil result is
// R's zero value when R can be nil (a pointer, a map, a slice, an
// interface), and a *ResultTypeError otherwise.
func Result[R any](res any, err error) (R, error) {
	var zero R
	if err != nil {
		return zero, err
	}
	r, ok := res.(R)
	if !ok {
		if res == nil && nilable(reflect.TypeFor[R]()) {
			return zero, nil
		}
		return zero, &ResultTypeError{Want: reflect.TypeFor[R](), Got: reflect.TypeOf(res)}
	}
	return r, nil
}

func nilable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return true
	}
	return false
}

// ResultTypeError is Result's error for a result that is not of the type
// asked for.
type ResultTypeError struct {
	Want reflect.Type // the R of Result[R]
	Got  reflect.Type // the result's dynamic type; nil for a nil result
}

func (e *ResultTypeError) Error() string {
	got := "nil"
	if e.Got != nil {
		got = e.Got.String()
	}
	return fmt.Sprintf("runner: the tool's result has type %s, not %s: ask Result for the type its function returns", got, e.Want)
}
