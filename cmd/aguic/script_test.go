package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/aguic/aguic/internal/golden"
	"github.com/aguic/aguic/internal/mcptest"
	"github.com/aguic/aguic/internal/pgtest"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"aguic": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScript runs the end-to-end scripts of testdata/script: each runs
// `exec aguic …` over the files of its archive, or, for the example_*
// scripts, over the repository's example workflows: $REPO is the root of
// the repository.
func TestScript(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		UpdateScripts:       golden.Update(),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("REPO", repo)
			// A script that needs the reference MCP server ([mcp]) starts
			// it with node $EVERYTHING stdio.
			env.Setenv("EVERYTHING", filepath.Join(repo, filepath.FromSlash(mcptest.EverythingEntry)))
			// A script that needs PostgreSQL ([postgres]) gets three schemas
			// of its own, in $STORE, $STORE2 and $STORE3.
			if url := os.Getenv(pgtest.Env); url != "" {
				for _, v := range []string{"STORE", "STORE2", "STORE3"} {
					schema, err := pgtest.Create(url, "script_"+filepath.Base(env.WorkDir))
					if err != nil {
						return err
					}
					env.Defer(func() {
						if err := pgtest.Drop(url, schema); err != nil {
							env.T().Log(err)
						}
					})
					env.Setenv(v, withSchema(url, schema))
				}
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "postgres":
				return os.Getenv(pgtest.Env) != "", nil
			case "mcp":
				return everythingInstalled(repo)
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"diagjson":   cmdDiagJSON,
			"perm":       cmdPerm,
			"jsonserver": cmdJSONServer,
		},
	})
}

// everythingInstalled reports whether node and the reference MCP server
// are there; when they are not and AGUIC_REQUIRE_AIMOCK is 1, as in CI,
// that is an error rather than a script skipped.
func everythingInstalled(repo string) (bool, error) {
	_, errNode := exec.LookPath("node")
	_, errEntry := os.Stat(filepath.Join(repo, filepath.FromSlash(mcptest.EverythingEntry)))
	if err := errors.Join(errNode, errEntry); err != nil {
		if os.Getenv(mcptest.RequireEnv) == "1" {
			return false, fmt.Errorf("the reference MCP server cannot run (%v): run `cd e2e && npm ci`", err)
		}
		return false, nil
	}
	return true, nil
}

// withSchema adds the schema to a PostgreSQL URL, as --store reads it.
func withSchema(raw, schema string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// cmdDiagJSON checks that a file (stdout, usually) holds a JSON array of n
// diagnostics, each with every field of the stable shape, and each of its
// related spans, if any, with every field of theirs.
//
//	diagjson stdout 3
func cmdDiagJSON(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: diagjson file count")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	var diags []map[string]any
	dec := json.NewDecoder(bytes.NewReader([]byte(ts.ReadFile(args[0]))))
	dec.UseNumber()
	if err := dec.Decode(&diags); err != nil {
		ts.Fatalf("%s is not a JSON array of objects: %v", args[0], err)
	}
	if dec.More() {
		ts.Fatalf("%s holds more than one JSON value", args[0])
	}
	if diags == nil {
		ts.Fatalf("%s is null, want an array", args[0])
	}
	if len(diags) != want {
		ts.Fatalf("%s holds %d diagnostics, want %d", args[0], len(diags), want)
	}
	for i, d := range diags {
		for _, field := range []string{"file", "line", "column", "endLine", "endColumn", "severity", "code", "message"} {
			if _, ok := d[field]; !ok {
				ts.Fatalf("diagnostic %d has no %q field: %v", i, field, d)
			}
		}
		related, ok := d["related"]
		if !ok {
			continue
		}
		list, ok := related.([]any)
		if !ok || len(list) == 0 {
			ts.Fatalf("diagnostic %d: related is not a non-empty array: %v", i, related)
		}
		for j, r := range list {
			r, ok := r.(map[string]any)
			if !ok {
				ts.Fatalf("diagnostic %d: related %d is not an object: %v", i, j, list[j])
			}
			for _, field := range []string{"file", "line", "column", "endLine", "endColumn", "message"} {
				if _, ok := r[field]; !ok {
					ts.Fatalf("diagnostic %d: related %d has no %q field: %v", i, j, field, r)
				}
			}
		}
	}
}

// cmdPerm checks the permission bits of a file.
//
//	perm file 0600
func cmdPerm(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: perm file mode")
	}
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	info, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	if got := info.Mode().Perm(); got != os.FileMode(want) {
		ts.Fatalf("%s has mode %#o, want %#o", args[0], got, want)
	}
}

// cmdJSONServer serves the .json files of a directory over HTTP on
// loopback until the script ends and sets an environment variable to the
// server's URL: a GET of /a/b answers the file a/b.json as
// application/json, whatever the query. Each request's method and URI are
// appended to the file requests.txt of the work directory.
//
//	jsonserver api WEATHER_API_URL
func cmdJSONServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jsonserver dir VAR")
	}
	dir, log := ts.MkAbs(args[0]), ts.MkAbs("requests.txt")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.WriteString(r.Method + " " + r.URL.RequestURI() + "\n")
			f.Close()
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path.Clean("/"+r.URL.Path))+".json"))
		if r.Method != http.MethodGet || err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(data)
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[1], srv.URL)
}

// TestWorkflows checks the repository's example workflows: every one must
// pass `aguic check`.
func TestWorkflows(t *testing.T) {
	dir := filepath.Join("..", "..", "workflows")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no workflows directory: %v", err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check", dir}, nil, &stdout, &stderr); code != exitOK {
		t.Errorf("aguic check %s: exit status %d\n%s%s", dir, code, stdout.String(), stderr.String())
	}
}
