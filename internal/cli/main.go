package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit statuses of Main.
const (
	exitOK       = 0
	exitFindings = 1 // the command ran and has something to report
	exitUsage    = 2 // the command line itself is wrong
)

// env is what a running command may touch: the standard output streams.
type env struct {
	stdout, stderr io.Writer
}

// command is one subcommand. To add one, write its file and list it in
// commands.
type command struct {
	name  string
	args  string // the synopsis after the flags, such as "[paths...]"
	short string // one line for the top-level help
	long  string // the body of 'toolreg <name> --help'
	// setup declares the command's flags on fs and returns the function that
	// runs the command once they are parsed, with the remaining arguments.
	setup func(fs *flag.FlagSet) func(e *env, args []string) int
}

// commands is the dispatch table, in the order the help lists them.
var commands = []*command{
	vetCommand,
	schemaCommand,
	genCommand,
	diffCommand,
	initCommand,
	versionCommand,
	searchCommand,
	migrateCommand,
	intentsCommand,
	budgetsCommand,
	approvalsCommand,
	pinCommand,
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// Main runs the toolreg command line args (without the program name) and
// returns the exit status. Output goes to stdout and stderr only.
func Main(args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	switch name := args[0]; name {
	case "-h", "-help", "--help":
		printUsage(stdout)
		return exitOK
	case "help":
		return help(e, args[1:])
	default:
		c := lookup(name)
		if c == nil {
			if strings.HasPrefix(name, "-") {
				fmt.Fprintf(stderr, "toolreg: flag %s comes before a command: write it after the command name\n", name)
			} else {
				fmt.Fprintf(stderr, "toolreg: unknown command %q\n", name)
			}
			fmt.Fprintln(stderr, "Run 'toolreg --help' for the list of commands.")
			return exitUsage
		}
		return c.run(e, args[1:])
	}
}

// run parses the command's flags and runs it. --help prints the command's help
// on stdout and succeeds; a bad flag is a usage error.
func (c *command) run(e *env, args []string) int {
	fs := flag.NewFlagSet("toolreg "+c.name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {} // Parse's errors are reported below, once
	runFn := c.setup(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.printHelp(e.stdout, fs)
			return exitOK
		}
		// The flag package has written what was wrong.
		fmt.Fprintf(e.stderr, "usage: %s\nRun 'toolreg %s --help' for details.\n", c.synopsis(fs), c.name)
		return exitUsage
	}
	if f := flagAfterArgs(fs, args); f != "" {
		fmt.Fprintf(e.stderr, "toolreg %s: flag %s comes after an argument, where it is read as one: write flags first\nusage: %s\n", c.name, f, c.synopsis(fs))
		return exitUsage
	}
	return runFn(e, fs.Args())
}

// flagAfterArgs returns the first of the arguments fs.Parse left (it stops
// at the first that is no flag) that names one of fs's flags or asks for
// help, such as the -n of "toolreg search refund -n 1", which would
// otherwise be taken for a path; "" if there is none, or if Parse stopped at
// "--", after which an argument may look like a flag.
func flagAfterArgs(fs *flag.FlagSet, args []string) string {
	// Parse took the first n arguments: flags, their values, and a "--"
	// that ends them, which can only be the last it took.
	n := len(args) - fs.NArg()
	for i := 0; i < n; i++ {
		if args[i] == "--" {
			return ""
		}
		if f, inline := flagOf(fs, args[i]); f != nil && !inline && !isBool(f) {
			i++ // its value, whatever it looks like
		}
	}
	for _, a := range fs.Args() {
		if f, _ := flagOf(fs, a); f != nil || a == "-h" || a == "--h" || a == "-help" || a == "--help" {
			return a
		}
	}
	return ""
}

// flagOf returns the flag of fs that the argument a names (-n, --n, -n=1),
// nil if none, and whether a carries its value.
func flagOf(fs *flag.FlagSet, a string) (f *flag.Flag, inline bool) {
	name, ok := strings.CutPrefix(a, "-")
	if !ok {
		return nil, false
	}
	name, _, inline = strings.Cut(strings.TrimPrefix(name, "-"), "=")
	return fs.Lookup(name), inline
}

// isBool reports whether f is a boolean flag, which takes no argument.
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// synopsis is the command's one-line usage, such as
// "toolreg vet [-v] [paths...]".
func (c *command) synopsis(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("toolreg ")
	b.WriteString(c.name)
	fs.VisitAll(func(f *flag.Flag) {
		name, _ := flag.UnquoteUsage(f)
		if name == "" {
			fmt.Fprintf(&b, " [-%s]", f.Name)
		} else {
			fmt.Fprintf(&b, " [-%s %s]", f.Name, name)
		}
	})
	if c.args != "" {
		b.WriteString(" ")
		b.WriteString(c.args)
	}
	return b.String()
}

func (c *command) printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s", c.synopsis(fs), c.long)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "\nFlags:")
		fs.SetOutput(w)
		fs.PrintDefaults() // fs is not used after its help
	}
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `toolreg checks tool manifests and renders the schemas a model is shown.

Usage:

	toolreg <command> [flags] [arguments]

The commands are:

`)
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(w, "\t%-*s %s\n", width, c.name, c.short)
	}
	fmt.Fprint(w, `
Run 'toolreg <command> --help' for more about a command.
`)
}

// help implements 'toolreg help [command]'.
func help(e *env, args []string) int {
	switch len(args) {
	case 0:
		printUsage(e.stdout)
		return exitOK
	case 1:
		if c := lookup(args[0]); c != nil {
			fs := flag.NewFlagSet("toolreg "+c.name, flag.ContinueOnError)
			c.setup(fs)
			c.printHelp(e.stdout, fs)
			return exitOK
		}
		fmt.Fprintf(e.stderr, "toolreg help: unknown command %q\nRun 'toolreg --help' for the list of commands.\n", args[0])
	default:
		fmt.Fprintln(e.stderr, "usage: toolreg help [command]")
	}
	return exitUsage
}
