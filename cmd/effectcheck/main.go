package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"golang.org/x/tools/go/analysis/unitchecker"

	"github.com/beam-agents/toolreg/effectcheck"
)

// vetInvocation reports whether go vet -vettool is running us: it asks for
// -V=full and -flags, then passes flags and one JSON .cfg file per package.
func vetInvocation(args []string) bool {
	if len(args) == 0 {
		return false
	}
	if last := args[len(args)-1]; strings.HasSuffix(last, ".cfg") {
		return true
	}
	return len(args) == 1 && (strings.HasPrefix(args[0], "-V") || args[0] == "-flags")
}

func main() {
	if vetInvocation(os.Args[1:]) {
		unitchecker.Main(effectcheck.Analyzer) // does not return
	}
	fs := flag.NewFlagSet("effectcheck", flag.ContinueOnError)
	tests := fs.Bool("test", false, "also check test files (an effect function's own tests call it on purpose)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: effectcheck [-test] [packages]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	findings, err := effectcheck.Check(".", *tests, patterns...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, f := range findings {
		fmt.Println(f)
	}
	if len(findings) > 0 {
		os.Exit(1)
	}
}
