package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/beam-agents/toolreg/internal/diag"
	"github.com/beam-agents/toolreg/provider"
	"github.com/beam-agents/toolreg/remote"
)

var vetCommand = &command{
	name:  "vet",
	args:  "[paths...]",
	short: "check manifests against schema.cue and report every problem",
	long: `Vet loads the tool manifests in paths, validates each one against schema.cue
(the schema 'cue vet' checks in CI, embedded in toolreg), and reports every
problem it finds, one a line, on stderr:

	file:line:col: tool: path: message

It reports every invalid document of every file, not only the first, and a
tool name declared in two places. It prints nothing when all is well.

Paths are manifest files or directories, searched recursively for .yaml, .yml
and .cue files; the default is ./manifests. A YAML file holds one tool per
document; a CUE file declares tools under a top-level 'tools' struct.

With -config it also checks, offline, that each remote tool (a manifest
with remote:, which toolreg pin writes) names a server that servers'
configuration file has (the service's mcp-servers.yaml): it connects to
nothing. The service checks the servers themselves at startup.

With -provider it also reports what that provider would refuse (errors: a
name or description it does not accept, a tool strict mode cannot express) or
degrade (warnings: a constraint moved into the description, a param with no
description), as

	file:line:col: severity: provider: tool: path: message

Errors fail vet; warnings fail it only with -strict. -v adds the notes of
severity info.

-format chooses the output. The default, text, is the lines above on
stderr. The others write to stdout, for CI to read:

	github  one GitHub Actions workflow command a finding, which the runner
	        shows as an annotation on the manifest's line in the pull request:
	        ::error file=manifests/refund.yaml,line=7,col=5,title=refund: params.amount::...
	sarif   a SARIF 2.1.0 log (rules "manifest" and "provider"), for code
	        scanning (github/codeql-action/upload-sarif) and other readers;
	        written whole even when there is nothing to report
	jsonl   one JSON object a finding: severity, rule, file, line, col,
	        title, message

With a machine format -v adds the provider's notes but not the list of
valid tools. The exit status is the same whatever the format: 0 when the
manifests are valid, 1 when vet reports anything that fails it, and 2 on a
usage error.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		verbose := fs.Bool("v", false, "print each valid tool on stdout, with its position")
		form := fs.String("provider", "", "also vet for this provider `form` ("+strings.Join(provider.Forms(), ", ")+")")
		strict := fs.Bool("strict", false, "with -provider, fail on warnings too")
		format := outputFlag(fs, "text")
		config := fs.String("config", "", "also check that each remote tool's server is in this servers' configuration `file`")
		return func(e *env, paths []string) int {
			if !checkFormat(e, "vet", *format, "text") {
				return exitUsage
			}
			if *form != "" && !provider.Known(*form) {
				fmt.Fprintf(e.stderr, "toolreg vet: %v\n", &provider.UnknownFormError{Name: *form})
				return exitUsage
			}
			if *strict && *form == "" {
				// Only a provider's findings are warnings: alone, -strict would pass silently.
				fmt.Fprintf(e.stderr, "toolreg vet: -strict fails on a provider's warnings: name the provider with -provider (%s)\n", strings.Join(provider.Forms(), ", "))
				return exitUsage
			}
			var servers remote.Servers
			if *config != "" {
				var err error
				if servers, err = remote.LoadConfig(*config); err != nil {
					fmt.Fprintf(e.stderr, "toolreg vet: %v\n", err)
					return exitUsage
				}
			}
			if *format != "text" {
				return vetForMachines(e, diag.Format(*format), paths, *form, *strict, *verbose, servers)
			}
			specs, ok := loadSpecs(e, "vet", paths)
			if !ok {
				return exitFindings
			}
			if servers != nil {
				if err := servers.Check(specs); err != nil {
					reportErr(e, "vet", err)
					return exitFindings
				}
			}
			status := exitOK
			if *form != "" {
				findings, err := provider.Vet(*form, specs)
				if err != nil && findings == nil {
					fmt.Fprintf(e.stderr, "toolreg vet: %v\n", err)
					return exitFindings
				}
				for _, f := range findings {
					if f.Severity > provider.Info || *verbose {
						fmt.Fprintln(e.stderr, f)
					}
					if f.Severity == provider.Error || (*strict && f.Severity == provider.Warning) {
						status = exitFindings
					}
				}
			}
			if *verbose {
				for _, s := range specs {
					kind := "read-only"
					if s.SideEffect {
						kind = "side effect"
					}
					params := "params"
					if len(s.Params) == 1 {
						params = "param"
					}
					fmt.Fprintf(e.stdout, "%s: %s: ok (%s, %d %s)\n", s.Pos, s.Name, kind, len(s.Params), params)
				}
			}
			return status
		}
	},
}

// vetTool is toolreg vet to a machine: its rules.
var vetTool = diagTool("vet",
	diag.Rule{ID: "manifest", Description: "A manifest meets schema.cue and the loader's rules, and names a tool no other manifest declares."},
	diag.Rule{ID: "provider", Description: "A model provider accepts the tool as declared, without dropping or moving a constraint."},
)

// vetForMachines is vet with a machine-readable -format: the same checks and
// exit status, every finding written to stdout in format.
func vetForMachines(e *env, format diag.Format, paths []string, form string, strict, verbose bool, servers remote.Servers) int {
	specs, fs := load(paths)
	if fs == nil && servers != nil {
		if err := servers.Check(specs); err != nil {
			fs = sortedFindings(err)
		}
	}
	var ds []diag.Diagnostic
	for _, f := range fs {
		ds = append(ds, findingDiag("manifest", f))
	}
	status := exitOK
	if fs != nil {
		status = exitFindings
	}
	if form != "" && fs == nil {
		findings, err := provider.Vet(form, specs)
		if err != nil && findings == nil {
			ds = append(ds, diag.Diagnostic{Severity: diag.Error, Rule: "provider", Message: err.Error()})
			status = exitFindings
		}
		for _, f := range findings {
			sev := diag.Note
			switch f.Severity {
			case provider.Error:
				sev = diag.Error
			case provider.Warning:
				sev = diag.Warning
			}
			if f.Severity > provider.Info || verbose {
				ds = append(ds, diagnostic(sev, "provider", f.Pos, f.Tool, f.Path, form+": "+f.Message))
			}
			if f.Severity == provider.Error || (strict && f.Severity == provider.Warning) {
				status = exitFindings
			}
		}
	}
	if !writeDiags(e, "vet", format, vetTool, ds) {
		return exitFindings
	}
	return status
}
