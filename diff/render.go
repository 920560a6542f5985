package diff

import (
	"fmt"
	"io"
	"strings"
)

// Summary counts the changes of each class: "1 safety, 2 breaking, 3 compatible".
func (r *Report) Summary() string {
	var n [3]int
	for _, c := range r.Changes {
		n[c.Class]++
	}
	if len(r.Changes) == 0 {
		return "no contract changes"
	}
	return fmt.Sprintf("%d safety, %d breaking, %d compatible", n[Safety], n[Breaking], n[Compatible])
}

// WriteText writes one change a line, as class: file:line:col: tool: path:
// message, then the summary.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, c := range r.Changes {
		b.WriteString(c.String())
		b.WriteByte('\n')
	}
	b.WriteString(r.Summary())
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the report as a Markdown table, for a pull request comment.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("### Tool contract changes\n\n")
	if len(r.Changes) == 0 {
		b.WriteString("No contract changes.\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	if worst, _ := r.Worst(); worst == Safety {
		b.WriteString("**A tool's `side_effect` flag changed. Review where it runs before merging.**\n\n")
	}
	b.WriteString("| Class | Tool | Field | Change | Where |\n|---|---|---|---|---|\n")
	for _, c := range r.Changes {
		field := "—" // the tool as a whole
		if c.Path != "" {
			field = "`" + strings.ReplaceAll(c.Path, "`", "'") + "`"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s |\n",
			mdClass(c.Class), c.Tool, field, mdEscape(c.Message), mdEscape(c.pos().String()))
	}
	b.WriteString("\n")
	b.WriteString(r.Summary())
	b.WriteString(".\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func mdClass(c Class) string {
	if c == Compatible {
		return c.String()
	}
	return "**" + c.String() + "**"
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
