package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/mcpclient"
	"github.com/aguic/aguic/mcplock"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

func mcpCommand() *command {
	c := &command{
		name:    "mcp",
		args:    "lock [--check] [paths…] | tools [--json] [--server name] [paths…]",
		summary: "lock or list the tools of the MCP servers .wf files declare",
		doc: `
Mcp connects to the MCP servers that the .wf files named by paths declare
(mcp name { … }), as aguic check reads paths: a directory stands for every
*.wf file below it; the default is the current directory. It starts stdio
servers and reaches URLs as aguic serve would, with the environment of
this process.

mcp lock lists the tools of every server and writes them to mcp.lock.json
in the directory of the files that declare it: one lock per directory,
holding the servers of that directory's files, with each tool's
description and input schema, the server's name and version and the
protocol version. aguic check reads the lock to check tool names and
arguments offline, and the server offers models the locked descriptions.
Locking the same servers again writes the same bytes.

With --check it writes nothing: it compares what the servers list now
with the locks and prints each difference (a lock missing, a server not
locked or no longer declared, a declaration whose command, args or url
changed since it was locked, a tool added or removed, or whose title,
description, schemas or annotations changed, with the JSON paths that
differ), for CI.

mcp tools prints the tools every server lists now: name, description
and parameters, and which ones the server's tools list leaves out.
--server keeps one server; --json prints a JSON array of
{"server", "tools"}, each tool as the lock writes it with "allowed".`,
		examples: `
# Lock the servers the workflows of the current directory declare.
aguic mcp lock
# In CI: fail when a server's tools changed since the lock was written.
aguic mcp lock --check workflows
# The tools of one server, as JSON.
aguic mcp tools --json --server everything workflows`,
		exit: "0 on success; 1 when the sources have errors or --check finds a lock out of date; 2 on a usage or I/O error, or when a server cannot be reached.",
		vars: map[string]string{"check": "", "json": "", "server": ""},
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		check := fs.Bool("check", false, "lock: compare the locks with the servers, write nothing")
		asJSON := fs.Bool("json", false, "tools: print JSON")
		server := fs.String("server", "", "tools: list the tools of the server `name` only")
		return func(e *env, args []string) int {
			if len(args) == 0 {
				return usageError(e, c, "missing subcommand: lock or tools")
			}
			sub, paths := args[0], args[1:]
			switch sub {
			case "lock":
				if *asJSON || *server != "" {
					return usageError(e, c, "--json and --server are flags of mcp tools")
				}
				return mcpLock(e, *check, paths)
			case "tools":
				if *check {
					return usageError(e, c, "--check is a flag of mcp lock")
				}
				return mcpTools(e, *asJSON, *server, paths)
			}
			return usageError(e, c, "unknown subcommand %q (want lock or tools)", sub)
		}
	}
	return c
}

// mcpSession is what the mcp subcommands share: the declared servers and
// a pool to reach them.
type mcpSession struct {
	e       *env
	ctx     context.Context
	pool    *mcpclient.Pool
	servers []*vm.Server
}

// openMCP compiles the .wf files of paths and makes a pool for their
// servers; close it with done. A status other than exitOK says it failed,
// reported.
//
// The files are compiled without their locks: the subcommands compare the
// servers with the locks themselves, and a stale lock must not stop the
// command that writes it again. For the same reason the warnings that a
// server is not locked are left out.
func openMCP(e *env, paths []string) (s *mcpSession, done func(), status int) {
	files, ok := wfFiles(e, orDot(paths))
	if !ok {
		return nil, nil, exitUsage
	}
	srcs, ok := readSources(e, files)
	if !ok {
		return nil, nil, exitUsage
	}
	srcs = slices.DeleteFunc(srcs, func(src compiler.Source) bool {
		return filepath.Base(src.Name) == mcplock.FileName
	})
	prog, diags := compiler.Compile(stdlib.Registry(), srcs...)
	diags = slices.DeleteFunc(diags, func(d diag.Diagnostic) bool { return d.Code == compiler.CodeNotLocked })
	if len(diags) > 0 {
		diags.WriteText(e.stderr, fileSet(srcs))
	}
	if diags.HasErrors() {
		return nil, nil, exitFound
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	pool := mcpPool(quietLog(e), nil)
	s = &mcpSession{e: e, ctx: ctx, pool: pool, servers: prog.Servers}
	return s, func() {
		_ = pool.Close()
		stop()
	}, exitOK
}

// each runs f on every server at once, and returns their errors by name.
func (s *mcpSession) each(servers []*vm.Server, f func(*vm.Server) error) map[string]error {
	var mu sync.Mutex
	errs := map[string]error{}
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Go(func() {
			if err := f(srv); err != nil {
				mu.Lock()
				errs[srv.Name] = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errs
}

// mcpLock writes, or with check compares, the lock of every directory
// whose files declare servers.
func mcpLock(e *env, check bool, paths []string) int {
	s, done, status := openMCP(e, paths)
	if status != exitOK {
		return status
	}
	defer done()
	if len(s.servers) == 0 {
		e.errorf("no mcp servers are declared in %s", strings.Join(orDot(paths), ", "))
		return exitUsage
	}
	var mu sync.Mutex
	live := map[string]*mcplock.Server{}
	errs := s.each(s.servers, func(srv *vm.Server) error {
		l, err := s.pool.Lock(s.ctx, srv)
		if err == nil {
			mu.Lock()
			live[srv.Name] = l
			mu.Unlock()
		}
		return err
	})
	byDir := map[string][]*vm.Server{}
	for _, srv := range s.servers {
		dir := filepath.Dir(srv.File)
		byDir[dir] = append(byDir[dir], srv)
	}
	for _, dir := range slices.Sorted(maps.Keys(byDir)) {
		path := filepath.Join(dir, mcplock.FileName)
		file := &mcplock.File{Version: mcplock.Version, Servers: map[string]*mcplock.Server{}}
		failed := false
		for _, srv := range byDir[dir] {
			if err := errs[srv.Name]; err != nil {
				e.errorf("%v", err)
				failed = true
				continue
			}
			file.Servers[srv.Name] = live[srv.Name]
		}
		if failed {
			what := "written"
			if check {
				what = "checked"
			}
			e.errorf("%s: not %s: a server could not be reached", path, what)
			status = exitUsage
			continue
		}
		var st int
		if check {
			st = checkLock(e, path, byDir[dir], file)
		} else {
			st = writeLock(e, path, file)
		}
		status = max(status, st)
	}
	return status
}

// orDot is paths, or "." for none.
func orDot(paths []string) []string {
	if len(paths) == 0 {
		return []string{"."}
	}
	return paths
}

// writeLock writes the lock file at path, unless it holds those bytes.
func writeLock(e *env, path string, file *mcplock.File) int {
	data, err := file.Marshal()
	if err != nil {
		e.errorf("%s: %v", path, err)
		return exitUsage
	}
	for _, name := range slices.Sorted(maps.Keys(file.Servers)) {
		l := file.Servers[name]
		fmt.Fprintf(e.stdout, "%s: %s: %d tools (%s %s, protocol %s)\n",
			path, name, len(l.Tools), l.Info.Name, l.Info.Version, l.Protocol)
	}
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		fmt.Fprintf(e.stdout, "%s: unchanged\n", path)
		return exitOK
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		e.errorf("%v", err)
		return exitUsage
	}
	fmt.Fprintf(e.stdout, "%s: written\n", path)
	return exitOK
}

// checkLock compares the lock file at path with what the servers declared
// in its directory list now, and prints each difference.
func checkLock(e *env, path string, declared []*vm.Server, live *mcplock.File) int {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(e.stdout, "%s: missing: run `aguic mcp lock`\n", path)
		return exitFound
	}
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	locked, err := mcplock.Parse(data)
	if err != nil {
		fmt.Fprintf(e.stdout, "%s: %v\n", path, err)
		return exitFound
	}
	var diffs []string
	for _, srv := range declared {
		l := locked.Servers[srv.Name]
		if l == nil {
			diffs = append(diffs, fmt.Sprintf("mcp server %s: not locked", srv.Name))
			continue
		}
		for _, what := range l.From.Changes(srv.Origin()) {
			diffs = append(diffs, fmt.Sprintf("mcp server %s: its %s changed", srv.Name, what))
		}
		for _, c := range mcplock.Diff(l, live.Servers[srv.Name]) {
			diffs = append(diffs, fmt.Sprintf("mcp server %s: %s", srv.Name, c))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(locked.Servers)) {
		if live.Servers[name] == nil {
			diffs = append(diffs, fmt.Sprintf("mcp server %s: locked but no longer declared", name))
		}
	}
	if len(diffs) == 0 {
		fmt.Fprintf(e.stdout, "%s: up to date\n", path)
		return exitOK
	}
	for _, d := range diffs {
		fmt.Fprintf(e.stdout, "%s: %s\n", path, d)
	}
	fmt.Fprintf(e.stdout, "%s: out of date: run `aguic mcp lock`\n", path)
	return exitFound
}

// listedTool is a tool as mcp tools --json prints it.
type listedTool struct {
	mcplock.Tool
	Allowed bool `json:"allowed"` // the server's tools list names it, or it has none
}

// mcpTools prints the tools the servers list now.
func mcpTools(e *env, asJSON bool, only string, paths []string) int {
	s, done, status := openMCP(e, paths)
	if status != exitOK {
		return status
	}
	defer done()
	servers := s.servers
	if only != "" {
		servers = nil
		for _, srv := range s.servers {
			if srv.Name == only {
				servers = append(servers, srv)
			}
		}
		if servers == nil {
			e.errorf("no mcp server %s is declared in %s", only, strings.Join(orDot(paths), ", "))
			return exitUsage
		}
	}
	if len(servers) == 0 {
		e.errorf("no mcp servers are declared in %s", strings.Join(orDot(paths), ", "))
		return exitUsage
	}
	var mu sync.Mutex
	tools := map[string][]mcplock.Tool{}
	errs := s.each(servers, func(srv *vm.Server) error {
		list, err := s.pool.Tools(s.ctx, srv)
		mu.Lock()
		tools[srv.Name] = list
		mu.Unlock()
		return err
	})
	type listed struct {
		Server string       `json:"server"`
		Tools  []listedTool `json:"tools"`
	}
	var out []listed
	for _, srv := range servers {
		if err := errs[srv.Name]; err != nil {
			e.errorf("%v", err)
			status = exitUsage
			continue
		}
		l := listed{Server: srv.Name, Tools: []listedTool{}}
		for _, t := range tools[srv.Name] {
			l.Tools = append(l.Tools, listedTool{Tool: t, Allowed: srv.Allows(t.Name)})
		}
		out = append(out, l)
	}
	if asJSON {
		data, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
		fmt.Fprintf(e.stdout, "%s\n", data)
		return status
	}
	for i, l := range out {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		fmt.Fprintf(e.stdout, "%s: %d tools\n", l.Server, len(l.Tools))
		for _, t := range l.Tools {
			writeTool(e, t)
		}
	}
	return status
}

// writeTool prints one tool: its name and description, then a line per
// parameter.
func writeTool(e *env, t listedTool) {
	head := "  " + t.Name
	if !t.Allowed {
		head += " (not in the server's tools list)"
	}
	if d := oneLine(t.Description); d != "" {
		head += ": " + d
	}
	fmt.Fprintln(e.stdout, head)
	props, _ := t.InputSchema["properties"].(map[string]any)
	required := map[string]bool{}
	if list, ok := t.InputSchema["required"].([]any); ok {
		for _, r := range list {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		p, _ := props[name].(map[string]any)
		var tags []string
		switch ty := p["type"].(type) {
		case string:
			tags = append(tags, ty)
		case []any:
			types := make([]string, len(ty))
			for i, t := range ty {
				types[i] = fmt.Sprint(t)
			}
			tags = append(tags, strings.Join(types, "|"))
		}
		if required[name] {
			tags = append(tags, "required")
		}
		if enum, ok := p["enum"].([]any); ok {
			words := make([]string, len(enum))
			for i, v := range enum {
				b, _ := json.Marshal(v)
				words[i] = string(b)
			}
			tags = append(tags, "one of "+strings.Join(words, ", "))
		}
		if def, ok := p["default"]; ok {
			b, _ := json.Marshal(def)
			tags = append(tags, "default "+string(b))
		}
		line := "      " + name
		if len(tags) > 0 {
			line += " (" + strings.Join(tags, ", ") + ")"
		}
		if d := oneLine(fmt.Sprint(p["description"])); p["description"] != nil && d != "" {
			line += ": " + d
		}
		fmt.Fprintln(e.stdout, line)
	}
}

// oneLine joins the lines of a description.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
