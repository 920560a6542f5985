package canonjson_test

import (
	"fmt"

	"github.com/beam-agents/toolreg/canonjson"
)

func ExampleMarshal() {
	type refund struct {
		OrderID string  `json:"order_id"`
		Amount  float64 `json:"amount"`
		Note    string  `json:"note,omitempty"`
	}
	b, err := canonjson.Marshal(refund{OrderID: "ord_2024_000123", Amount: 20.5})
	fmt.Println(string(b), err)

	// A generic value, as an intent's arguments are held: a float stays a float.
	b, err = canonjson.Marshal(map[string]any{"reason": "remboursé <damaged>", "amount": 20.0})
	fmt.Println(string(b), err)
	// Output:
	// {"amount":20.5,"order_id":"ord_2024_000123"} <nil>
	// {"amount":20.0,"reason":"remboursé <damaged>"} <nil>
}

func ExampleCanonicalize() {
	b, err := canonjson.Canonicalize([]byte(`{"b": [1.50, 1e2, "\u00e9"], "a": 12345678901234567890}`))
	fmt.Println(string(b), err)

	_, err = canonjson.Canonicalize([]byte(`{"a":1} {"b":2}`))
	fmt.Println(err)
	// Output:
	// {"a":12345678901234567890,"b":[1.5,100.0,"é"]} <nil>
	// canonjson: text after the value, at byte 8: pass exactly one JSON value
}
