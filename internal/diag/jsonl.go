package diag

import (
	"bytes"
	"encoding/json"
	"io"
)

// jsonLine is the shape of one line of the jsonl format; its field names are
// the format's contract.
type jsonLine struct {
	Severity string `json:"severity"`
	Rule     string `json:"rule"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Col      int    `json:"col,omitempty"`
	Title    string `json:"title,omitempty"`
	Message  string `json:"message"`
}

// writeJSONL writes one JSON object a line, in the order of ds.
func writeJSONL(w io.Writer, ds []Diagnostic) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b) // Encode ends each value with a newline
	enc.SetEscapeHTML(false)
	for _, d := range ds {
		if err := enc.Encode(jsonLine{d.Severity.String(), d.Rule, d.File, d.Line, d.Col, d.Title, d.Message}); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
