// Package mcplock is the lock file of the MCP servers a set of workflows
// declares: for each server, the tools it listed when `aguic mcp lock`
// connected to it, with their descriptions and input schemas. The compiler
// checks tool names and call arguments against it offline, and the runtime
// offers the model the locked descriptions, so a server that changes its
// tools changes nothing until the lock is written again.
package mcplock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// FileName is the name of a lock file. It sits in the directory of the .wf
// files that declare the servers it locks.
const FileName = "mcp.lock.json"

// Version is the format version written in new lock files.
const Version = 1

// File is one lock file.
type File struct {
	Version int                `json:"version"`
	Servers map[string]*Server `json:"servers"` // by the name the .wf file declares
}

// Server is what one server reported when it was locked.
type Server struct {
	// From is the declaration the server was locked from: a lock whose From
	// differs from the declaration is stale.
	From Origin `json:"from"`
	// Protocol is the MCP protocol version the session negotiated.
	Protocol string `json:"protocolVersion,omitempty"`
	// Info is the server's name and version as it reported them.
	Info Info `json:"serverInfo"`
	// Tools are every tool the server listed, sorted by name.
	Tools []Tool `json:"tools"`
}

// Origin is the source text of the values of a declaration that say which
// server it is: its command and args, or its url. Other values (env,
// headers, timeouts) do not change what the server is.
type Origin struct {
	Command string `json:"command,omitempty"`
	Args    string `json:"args,omitempty"`
	URL     string `json:"url,omitempty"`
}

// Changes names the values whose source text differs between o, the
// origin a server was locked from, and now, its declaration's: "command",
// "args" or "url", in that order; none when the lock is not stale.
func (o Origin) Changes(now Origin) []string {
	var out []string
	for _, f := range []struct{ name, a, b string }{
		{"command", o.Command, now.Command},
		{"args", o.Args, now.Args},
		{"url", o.URL, now.URL},
	} {
		if f.a != f.b {
			out = append(out, f.name)
		}
	}
	return out
}

// Info is a server's self-description.
type Info struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Tool is one tool as the server listed it.
type Tool struct {
	Name         string         `json:"name"`
	Title        string         `json:"title,omitempty"`
	Description  string         `json:"description,omitempty"`
	InputSchema  map[string]any `json:"inputSchema"`
	OutputSchema map[string]any `json:"outputSchema,omitempty"`
	Annotations  map[string]any `json:"annotations,omitempty"`
}

// Tool returns the tool with the given name, or nil.
func (s *Server) Tool(name string) *Tool {
	if s == nil {
		return nil
	}
	for i := range s.Tools {
		if s.Tools[i].Name == name {
			return &s.Tools[i]
		}
	}
	return nil
}

// ToolNames returns the names of the server's tools, sorted.
func (s *Server) ToolNames() []string {
	if s == nil {
		return nil
	}
	names := make([]string, len(s.Tools))
	for i, t := range s.Tools {
		names[i] = t.Name
	}
	slices.Sort(names)
	return names
}

// Parse reads a lock file.
func Parse(data []byte) (*File, error) {
	var f File
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not an MCP lock file: %v", err)
	}
	if f.Version != Version {
		return nil, fmt.Errorf("MCP lock file version %d, want %d: write it again with aguic mcp lock", f.Version, Version)
	}
	if f.Servers == nil {
		f.Servers = map[string]*Server{}
	}
	for name, s := range f.Servers {
		if s == nil {
			return nil, fmt.Errorf("MCP lock file: server %q is null", name)
		}
		for i, t := range s.Tools {
			if t.Name == "" {
				return nil, fmt.Errorf("MCP lock file: server %q: tool %d has no name", name, i+1)
			}
		}
	}
	return &f, nil
}

// Marshal writes f in its canonical form: indented JSON, servers and
// object keys sorted, tools sorted by name, ending with a newline, so that
// locking the same servers twice writes the same bytes.
func (f *File) Marshal() ([]byte, error) {
	out := File{Version: f.Version, Servers: f.Servers}
	if out.Version == 0 {
		out.Version = Version
	}
	for _, s := range out.Servers {
		slices.SortFunc(s.Tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
