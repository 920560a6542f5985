package toolreg

import (
	"fmt"
	"regexp"
)

// Remote says where a pinned remote tool is served: by an MCP server that the
// service's configuration names, under the tool's name there. A Spec with a
// Remote is the reviewed copy of what that server serves (description,
// params, returns, annotations), bound at startup by package remote, which
// refuses to start when the server serves anything else. side_effect is the
// manifest's decision, never the server's hint.
type Remote struct {
	// Server is the server's name in the service's configuration, which maps
	// it to a stdio command or a streamable HTTP URL.
	Server string
	// Tool is the tool's name on the server; the Spec's Name is what the
	// model calls it by, and may differ.
	Tool string
	// Title is the tool's title as the server serves it (MCP's Tool.title);
	// "" when it serves none. Its annotations' title is Spec.Annotations.
	Title string
	// ReadOnlyHint is the server's annotations.readOnlyHint, pinned so that a
	// change of it is seen. It is a hint only: SideEffect decides how the
	// tool runs.
	ReadOnlyHint bool
}

var (
	// serverNameRE is schema.cue's #ServerName.
	serverNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)
	// remoteToolRE is schema.cue's #RemoteToolName: the names MCP allows.
	remoteToolRE = regexp.MustCompile(`^[a-zA-Z0-9_./-]{1,128}$`)
)

// ValidServerName reports whether name can name an MCP server in a
// manifest and in the service's configuration: 1 to 64 letters, digits,
// '_', '.' or '-'.
func ValidServerName(name string) bool { return serverNameRE.MatchString(name) }

// ValidRemoteToolName reports whether name is a tool name MCP allows and a
// manifest can pin: 1 to 128 letters, digits, '_', '.', '/' or '-'.
func ValidRemoteToolName(name string) bool { return remoteToolRE.MatchString(name) }

// checkRemote adds the problems of a Spec's Remote.
func checkRemote(s *Spec, add func(Pos, string, string, ...any)) {
	r := s.Remote
	if !ValidServerName(r.Server) {
		add(s.Pos, "remote.server", "invalid server name %q: use 1 to 64 letters, digits, '_', '.' or '-', as the service's configuration names it", r.Server)
	}
	if !ValidRemoteToolName(r.Tool) {
		add(s.Pos, "remote.tool", "invalid remote tool name %q: use the tool's name on the server, 1 to 128 letters, digits, '_', '.', '/' or '-'", r.Tool)
	}
}

// ToolWithdrawnError is a call of a remote tool that was taken out of the
// offered set at run time. Nothing is sent to the server.
//
// Withdrawn for good (Temporary false): its server changed the tool
// (announced with tools/list_changed, or after a reconnection) so that it no
// longer matches its reviewed manifest, or stopped serving it; it stays out
// until it is re-pinned, reviewed, and the service restarted. Suspended
// (Temporary true): its server cannot be reached or checked now; it is
// offered again once the server answers and serves what the manifest pins.
type ToolWithdrawnError struct {
	Name string
	// Reason says what changed, such as "description: pinned ..., served ...".
	Reason    string
	Temporary bool
}

func (e *ToolWithdrawnError) Error() string {
	if e.Temporary {
		return fmt.Sprintf("toolreg: tool %q is unavailable: %s; nothing was sent: it is offered again once its server answers and serves what its manifest pins", e.Name, e.Reason)
	}
	return fmt.Sprintf("toolreg: tool %q was withdrawn: %s; nothing was sent: re-pin the tool (toolreg pin), review the diff and restart", e.Name, e.Reason)
}

// ModelMessage renders the refusal for the model that made the call: the tool
// is not available, and the model should do without it.
func (e *ToolWithdrawnError) ModelMessage() string {
	if e.Temporary {
		return fmt.Sprintf("The call to %s was not run: the tool is unavailable right now (its server cannot be reached). Use another tool, or tell the user it is unavailable for now.", e.Name)
	}
	return fmt.Sprintf("The call to %s was not run: the tool is no longer available (its server changed it, and the change has not been reviewed). Do not call it again; use another tool, or tell the user it is unavailable.", e.Name)
}

func (e *ToolWithdrawnError) Is(target error) bool { return target == ErrTool }

// Withdrawn returns a *ToolWithdrawnError when t is a remote tool taken out
// of the offered set (see ToolWithdrawnError), and nil otherwise. A
// registry leaves a withdrawn tool out of its schemas and its search, and
// Get refuses it; Call refuses it too.
func (t *Tool) Withdrawn() error {
	if t.gate == nil {
		return nil
	}
	if reason, temporary, out := t.gate.Withdrawn(); out {
		return &ToolWithdrawnError{Name: t.spec.Name, Reason: reason, Temporary: temporary}
	}
	return nil
}
