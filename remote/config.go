package remote

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"

	"github.com/beam-agents/toolreg"
)

// Server says how to reach one MCP server: a stdio command, or a streamable
// HTTP URL. Exactly one of Command, URL and Transport is set.
type Server struct {
	// Command is the server's program and its arguments, started with the
	// process's environment plus Env, in Dir ("" is the current directory),
	// speaking MCP over its stdin and stdout. It is started again, and its
	// tools checked again, when it exits.
	Command []string
	Env     []string // "KEY=value"
	Dir     string

	// URL is a streamable HTTP endpoint; Header is sent with every request
	// (an Authorization header, say).
	URL    string
	Header http.Header
	// HTTPClient sends the requests; nil is http.DefaultClient's transport.
	HTTPClient *http.Client

	// Transport, for a server in this process (tests, an embedded server),
	// makes a new connection's transport each time one is needed.
	Transport func() (mcp.Transport, error)
}

func (s Server) check() error {
	n := 0
	for _, set := range []bool{len(s.Command) > 0, s.URL != "", s.Transport != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return errors.New("it says neither a command nor a url")
	case n > 1:
		return errors.New("it says more than one of command, url and transport: give one")
	case len(s.Command) > 0 && s.Command[0] == "":
		return errors.New("its command names no program")
	case s.URL != "":
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("its url %q is not an http or https URL", s.URL)
		}
	}
	return nil
}

// Servers maps the server names manifests use (remote.server) to how to
// reach each.
type Servers map[string]Server

// Check reports each remote tool of specs (Spec.Remote) whose server is not
// in servers, or is configured wrong, at its manifest's position, as one
// *toolreg.ToolDefinitionError; nil when every one is there. It connects to
// nothing: toolreg vet -config runs it offline, and Connect runs it first.
func (servers Servers) Check(specs []*toolreg.Spec) error {
	var ps []toolreg.Problem
	for _, spec := range specs {
		if p, bad := servers.problem(spec); bad {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return nil
	}
	return &toolreg.ToolDefinitionError{Problems: ps}
}

// problem is spec's problem with servers, if it has one.
func (servers Servers) problem(spec *toolreg.Spec) (toolreg.Problem, bool) {
	if spec == nil || spec.Remote == nil {
		return toolreg.Problem{}, false
	}
	name := spec.Remote.Server
	cfg, ok := servers[name]
	if !ok {
		return toolreg.Problem{Pos: spec.Pos, Tool: spec.Name, Path: "remote.server",
			Message: fmt.Sprintf("no server %q in the configuration: add it, with its command or url%s", name, knownServers(servers))}, true
	}
	if err := cfg.check(); err != nil {
		return toolreg.Problem{Pos: spec.Pos, Tool: spec.Name, Path: "remote.server",
			Message: fmt.Sprintf("server %q is configured wrong: %v", name, err)}, true
	}
	return toolreg.Problem{}, false
}

func knownServers(servers Servers) string {
	if len(servers) == 0 {
		return " (it configures none)"
	}
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, fmt.Sprintf("%q", n))
	}
	sort.Strings(names)
	return " (it configures " + strings.Join(names, ", ") + ")"
}

// DefaultConfig is the file `toolreg pin` reads the servers from unless told
// otherwise.
const DefaultConfig = "mcp-servers.yaml"

// LoadConfig reads the servers of a YAML file:
//
//	servers:
//	  github:
//	    command: [github-mcp-server, stdio]
//	    env: {GITHUB_TOOLSETS: issues}
//	  docs:
//	    url: https://docs.example.com/mcp
//	    headers: {Authorization: "Bearer ${DOCS_TOKEN}"}
//
// ${NAME} in a value (a url, a header, an env value, an argument) is
// replaced with the process's environment variable NAME, so the file holds no
// secret; a variable that is not set is an error naming it. Every problem of the file comes back at once,
// with its line.
func LoadConfig(path string) (Servers, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("remote: reading the servers' configuration: %w", err)
	}
	return ParseConfig(path, data)
}

// ParseConfig is LoadConfig of data, read from file (named in messages).
func ParseConfig(file string, data []byte) (Servers, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, &ConfigError{Problems: []toolreg.Problem{{Pos: toolreg.Pos{File: file}, Message: "not YAML: " + err.Error()}}}
	}
	c := &configReader{file: file}
	out := Servers{}
	if len(doc.Content) == 0 {
		c.add(&doc, "", "the file is empty: give servers:, each with its command or url")
		return nil, c.err()
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		c.add(root, "", "the file holds %s, not a mapping with servers:", kindName(root))
		return nil, c.err()
	}
	var servers *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "servers" {
			c.add(k, k.Value, "unknown key: the file takes servers:")
			continue
		}
		servers = v
	}
	if servers == nil || servers.Kind != yaml.MappingNode {
		c.add(root, "servers", "no servers: mapping: name each server, with its command or url")
		return nil, c.err()
	}
	for i := 0; i+1 < len(servers.Content); i += 2 {
		k, v := servers.Content[i], servers.Content[i+1]
		name := k.Value
		if !toolreg.ValidServerName(name) {
			c.add(k, "servers."+name, "invalid server name %q: use 1 to 64 letters, digits, '_', '.' or '-', as manifests name it", name)
			continue
		}
		if _, dup := out[name]; dup {
			c.add(k, "servers."+name, "server %q is named twice", name)
			continue
		}
		s, ok := c.server(v, "servers."+name)
		if !ok {
			continue
		}
		if err := s.check(); err != nil {
			c.add(v, "servers."+name, "%v", err)
			continue
		}
		out[name] = s
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ConfigError lists every problem of a servers' configuration file.
type ConfigError struct {
	Problems []toolreg.Problem
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("remote: the servers' configuration has problems:")
	for _, p := range e.Problems {
		b.WriteString("\n\t")
		b.WriteString(p.String())
	}
	return b.String()
}

type configReader struct {
	file string
	ps   []toolreg.Problem
}

func (c *configReader) add(n *yaml.Node, path, format string, args ...any) {
	c.ps = append(c.ps, toolreg.Problem{Pos: toolreg.Pos{File: c.file, Line: n.Line, Col: n.Column}, Path: path, Message: fmt.Sprintf(format, args...)})
}

func (c *configReader) err() error {
	if len(c.ps) == 0 {
		return nil
	}
	return &ConfigError{Problems: c.ps}
}

func (c *configReader) server(n *yaml.Node, path string) (Server, bool) {
	var s Server
	if n.Kind != yaml.MappingNode {
		c.add(n, path, "a server is a mapping with command or url, not %s", kindName(n))
		return s, false
	}
	before := len(c.ps)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := path + "." + k.Value
		switch k.Value {
		case "command":
			if v.Kind != yaml.SequenceNode {
				c.add(v, kp, "command is a list: the program, then its arguments")
				continue
			}
			for _, a := range v.Content {
				if a.Kind != yaml.ScalarNode {
					c.add(a, kp, "an argument is a string")
					continue
				}
				s.Command = append(s.Command, c.expand(a, kp))
			}
		case "dir":
			s.Dir = c.expand(v, kp)
		case "env":
			for name, val := range c.strings(v, kp) {
				s.Env = append(s.Env, name+"="+val)
			}
			sort.Strings(s.Env)
		case "url":
			s.URL = c.expand(v, kp)
		case "headers":
			h := c.strings(v, kp)
			if len(h) > 0 {
				s.Header = http.Header{}
				for name, val := range h {
					s.Header.Set(name, val)
				}
			}
		default:
			c.add(k, kp, "unknown key %q: a server takes command, env, dir, url, headers", k.Value)
		}
	}
	return s, len(c.ps) == before
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// strings reads a mapping of strings, expanding ${NAME} from the environment.
func (c *configReader) strings(n *yaml.Node, path string) map[string]string {
	out := map[string]string{}
	if n.Kind != yaml.MappingNode {
		c.add(n, path, "a mapping of names to strings")
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			c.add(v, path+"."+k.Value, "a string")
			continue
		}
		out[k.Value] = c.expand(v, path+"."+k.Value)
	}
	return out
}

// expand is the scalar n with each ${NAME} replaced by the environment
// variable NAME; one that is not set is a problem at n.
func (c *configReader) expand(n *yaml.Node, path string) string {
	return envRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
		name := envRef.FindStringSubmatch(ref)[1]
		x, ok := os.LookupEnv(name)
		if !ok {
			c.add(n, path, "the environment variable %s is not set: set it, or write the value", name)
		}
		return x
	})
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "nothing"
}
