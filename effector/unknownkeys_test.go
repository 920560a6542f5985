package effector_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/syncbuf"
)

type shipArgs struct {
	OrderID string `json:"order_id"`
	Address struct {
		City string  `json:"city"`
		Zip  *string `json:"zip"`
	} `json:"address"`
	Items []struct {
		SKU string `json:"sku"`
	} `json:"items"`
	Labels *map[string]string `json:"labels"`
}

// shipFixture is an effect table of two side-effecting tools, ship (with
// nested objects, an array of objects and a map) and note, and what ship's
// function was called with.
func shipFixture(t *testing.T) (*bindings.Bound, *[]shipArgs) {
	t.Helper()
	str := toolreg.Schema{Type: toolreg.TypeString, Description: "S."}
	ship := &toolreg.Spec{Name: "ship", Description: "Ship an order.", SideEffect: true, Params: []*toolreg.Param{
		{Name: "order_id", Schema: str},
		{Name: "address", Schema: toolreg.Schema{Type: toolreg.TypeObject, Description: "Where.", Properties: []*toolreg.Param{
			{Name: "city", Schema: str}, {Name: "zip", Schema: str, Optional: true}}}},
		{Name: "items", Schema: toolreg.Schema{Type: toolreg.TypeArray, Description: "What.", Items: &toolreg.Schema{
			Type: toolreg.TypeObject, Properties: []*toolreg.Param{{Name: "sku", Schema: str}}}}},
		{Name: "labels", Optional: true, Schema: toolreg.Schema{Type: toolreg.TypeObject, Description: "Free labels.",
			AdditionalProperties: &toolreg.Schema{Type: toolreg.TypeString}}},
	}}
	note := &toolreg.Spec{Name: "note", Description: "Note.", SideEffect: true, Params: []*toolreg.Param{{Name: "text", Schema: str}}}
	var got []shipArgs
	b := bindings.New([]*toolreg.Spec{ship, note})
	bindings.Effect(b, "ship", func(_ context.Context, a shipArgs) (string, error) {
		got = append(got, a)
		return "shipped", nil
	})
	bindings.Effect(b, "note", func(context.Context, struct {
		Text string `json:"text"`
	}) (string, error) {
		return "noted", nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	return bound, &got
}

// What a Python pipeline stages: pydantic ignores extra keys, so its intents
// may carry keys the manifest does not declare.
const fromPython = `{"order_id":"o-1","trace_id":"t-9","address":{"city":"Oslo","country":"NO"},` +
	`"items":[{"sku":"a","weight":2},{"sku":"b"}],"labels":{"gift":"yes"}}`

func TestUnknownKeysAreRefusedByDefault(t *testing.T) {
	t.Parallel()
	bound, got := shipFixture(t)
	e, err := effector.New(bound.Effector, effector.NewMemoryStore(), effector.WithClock(fixedClock), effector.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Process(context.Background(), intentFor("ship", fromPython, 1))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != intent.StatusRejected || !strings.Contains(res.ErrorMessage, "/trace_id") || len(*got) != 0 {
		t.Errorf("Process = %v %q, function called %d times; want REJECTED naming /trace_id and no call", res.Status, res.ErrorMessage, len(*got))
	}
}

func TestWithDropUnknownKeysDropsThemForTheToolsItNamesAndLogsEach(t *testing.T) {
	t.Parallel()
	bound, got := shipFixture(t)
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	e, err := effector.New(bound.Effector, effector.NewMemoryStore(), effector.WithClock(fixedClock), effector.WithLogger(logger),
		effector.WithDropUnknownKeys("ship"))
	if err != nil {
		t.Fatal(err)
	}
	in := intentFor("ship", fromPython, 1)
	res, err := e.Process(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != intent.StatusOK || len(*got) != 1 {
		t.Fatalf("Process = %v %q, function called %d times; want OK once", res.Status, res.ErrorMessage, len(*got))
	}
	a := (*got)[0]
	if a.OrderID != "o-1" || a.Address.City != "Oslo" || len(a.Items) != 2 || a.Items[1].SKU != "b" || a.Labels == nil || (*a.Labels)["gift"] != "yes" {
		t.Errorf("the function got %+v", a)
	}
	// The note: which tool, which intent, which keys (paths, not values).
	var note struct {
		Level  string   `json:"level"`
		Msg    string   `json:"msg"`
		Intent string   `json:"intent_id"`
		Tool   string   `json:"tool"`
		Keys   []string `json:"keys"`
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if json.Unmarshal([]byte(line), &note) == nil && strings.Contains(note.Msg, "WithDropUnknownKeys") {
			found = true
			break
		}
	}
	if !found {
		t.Fatalf("no log line about the dropped keys:\n%s", logs.String())
	}
	if diff := cmp.Diff([]string{"/address/country", "/items/0/weight", "/trace_id"}, note.Keys); diff != "" {
		t.Errorf("logged keys (-want +got):\n%s", diff)
	}
	if note.Tool != "ship" || note.Intent != in.ID || note.Level != "INFO" {
		t.Errorf("log note %+v", note)
	}
	if strings.Contains(logs.String(), "t-9") || strings.Contains(logs.String(), "NO\"") {
		t.Errorf("the log holds argument values:\n%s", logs.String())
	}

	// Only for the tools it names: note still refuses them.
	res, err = e.Process(context.Background(), intentFor("note", `{"text":"hi","trace_id":"t-9"}`, 2))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != intent.StatusRejected || !strings.Contains(res.ErrorMessage, "/trace_id") {
		t.Errorf("note with an unknown key: %v %q, want REJECTED", res.Status, res.ErrorMessage)
	}
	// Dropping keys never makes bad JSON good, nor a wrong value right.
	for i, args := range []string{`{"order_id":"o-1","address":{"city":"Oslo"},"items":[]} trailing`, `{"order_id":5,"address":{"city":"Oslo"},"items":[],"x":1}`} {
		res, err := e.Process(context.Background(), intentFor("ship", args, uint32(10+i)))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != intent.StatusRejected {
			t.Errorf("%s: %v, want REJECTED", args, res.Status)
		}
	}
}

func TestWithDropUnknownKeysRefusesAToolTheTableDoesNotHold(t *testing.T) {
	t.Parallel()
	bound, _ := shipFixture(t)
	_, err := effector.New(bound.Effector, effector.NewMemoryStore(), effector.WithDropUnknownKeys("shp"))
	var ce *effector.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `WithDropUnknownKeys("shp")`) {
		t.Errorf("New = %v, want a *ConfigError naming WithDropUnknownKeys(\"shp\")", err)
	}
}
