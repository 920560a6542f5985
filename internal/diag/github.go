package diag

import (
	"io"
	"strconv"
	"strings"
)

// writeGitHub writes one workflow command a diagnostic, as the Actions runner
// reads them from a step's output:
//
//	::error file=manifests/refund.yaml,line=4,col=3,title=refund: params::message
//
// A note is a ::notice.
func writeGitHub(w io.Writer, ds []Diagnostic) error {
	var b strings.Builder
	for _, d := range ds {
		cmd := "error"
		switch d.Severity {
		case Warning:
			cmd = "warning"
		case Note:
			cmd = "notice"
		}
		b.WriteString("::")
		b.WriteString(cmd)
		var props []string
		if d.File != "" {
			props = append(props, "file="+escapeProperty(d.File))
			if d.Line > 0 {
				props = append(props, "line="+strconv.Itoa(d.Line))
				if d.Col > 0 {
					props = append(props, "col="+strconv.Itoa(d.Col))
				}
			}
		}
		if d.Title != "" {
			props = append(props, "title="+escapeProperty(d.Title))
		}
		if len(props) > 0 {
			b.WriteByte(' ')
			b.WriteString(strings.Join(props, ","))
		}
		b.WriteString("::")
		b.WriteString(escapeData(d.Message))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// The runner's own escapes (actions/toolkit, packages/core/src/command.ts):
// a message may not hold a line break, and a property may not hold the ','
// that separates properties or the ':' that ends them either.
var (
	dataEscaper     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	propertyEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

func escapeData(s string) string     { return dataEscaper.Replace(s) }
func escapeProperty(s string) string { return propertyEscaper.Replace(s) }
