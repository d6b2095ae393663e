package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/wftest"
)

func testCommand() *command {
	c := &command{
		name:    "test",
		args:    "[-v] [--run regexp] [--format text|github] [--junit file] [--update] [--parallel n] [--timeout d] [--max-steps n] [paths…]",
		summary: "run the tests of workflows",
		doc: `
Test runs the tests of workflows: the .wftest files named by paths, or
below them when they are directories (the default is the current
directory), hidden directories and node_modules left out. A .wf file
stands for the .wftest file beside it. chat.wftest tests a workflow of
chat.wf, compiled with every .wf file of its directory and the directories
below it, as aguic run compiles them; docs/testing.md describes the format.

Each test runs with the interpreter alone, as aguic run plays a chat: a
fresh frame in memory, model calls answered from the test's scripted
replies (their delays left out), http nodes and tools answered by the
test's http stubs and MCP tools by its mcp stubs, env reading only the
test's env lines, and sleeps ended at once. Nothing reaches the network:
a request no stub answers fails the test, at the line of the turn that
made it, naming the node in the .wf file. Tests run in parallel, at most
--parallel at a time.

The output is go test's: each failed test as "--- FAIL: file/name" with
each failure as file:line:col: message at the test file's line, expected
and found side by side or, for long text and JSON, as a compact diff; then
"ok" or "FAIL" for each file. -v lists every test. --format github adds a
GitHub Actions error annotation at each failure; --junit writes JUnit XML
for CI systems.

--update rewrites, in place, each failing expectation of an exact value
(a reply "text", a value, = JSON, an outcome) and each expectation written
without a value yet, with what the test found; patterns (contains,
/regexp/, JSON subsets) and every other byte of the file stay as they are.`,
		examples: `
# Run the tests of the example workflows.
aguic test workflows
# Run the tests of one workflow whose names match, listing each.
aguic test -v --run refund workflows/approval.wf
# In CI: annotations on the pull request, and a JUnit report.
aguic test --format github --junit report.xml workflows
# Write the replies and values the tests expect from what they find now.
aguic test --update workflows/chat.wftest`,
		exit: "0 when every test passed, 1 when a test failed, a test file is malformed or the workflows do not compile, 2 on a usage or I/O error.",
		vars: map[string]string{"format": "", "run": "", "junit": "", "update": "", "v": "", "timeout": ""},
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		verbose := fs.Bool("v", false, "list every test, passed or not")
		runRe := fs.String("run", "", "run only the tests whose file/name matches this `regexp`")
		format := fs.String("format", "text", "output `format`: text, or github for annotations as well")
		junit := fs.String("junit", "", "write a JUnit XML report to this `file`")
		update := fs.Bool("update", false, "rewrite the failing exact expectations with what the tests found")
		parallel := runtime.GOMAXPROCS(0)
		checkedVar(fs, &parallel, "parallel", "", "how many tests run at a time (`n`; the default is the number of CPUs)", positive)
		timeout := time.Minute
		fs.DurationVar(&timeout, "timeout", timeout, "fail a test that runs longer than this `duration`")
		maxSteps := vm.DefaultMaxVisits
		checkedVar(fs, &maxSteps, "max-steps", "1000", "the most nodes one run may visit (`n`)", positive)
		return func(e *env, args []string) int {
			if *format != "text" && *format != "github" {
				return usageError(e, c, "unknown format %q (want text or github)", *format)
			}
			var filter *regexp.Regexp
			if *runRe != "" {
				re, err := regexp.Compile(*runRe)
				if err != nil {
					return usageError(e, c, "--run: %v", err)
				}
				filter = re
			}
			if len(args) == 0 {
				args = []string{"."}
			}
			files, ok := testFiles(e, args)
			if !ok {
				return exitUsage
			}
			t := &tester{e: e, filter: filter, opts: wftest.Options{MaxVisits: maxSteps, Update: *update}, parallel: parallel, timeout: timeout}
			results := t.run(files)
			if *update {
				for i, r := range results {
					if r.Updated > 0 {
						if err := os.WriteFile(files[i], t.updated[i], 0o644); err != nil {
							e.errorf("%v", err)
							return exitUsage
						}
					}
				}
			}
			wftest.WriteText(e.stdout, results, *verbose)
			if *format == "github" {
				wftest.WriteGitHub(e.stdout, results)
			}
			if *junit != "" {
				f, err := os.Create(*junit)
				if err == nil {
					err = wftest.WriteJUnit(f, results)
					if cerr := f.Close(); err == nil {
						err = cerr
					}
				}
				if err != nil {
					e.errorf("--junit: %v", err)
					return exitUsage
				}
			}
			for _, r := range results {
				if r.Failed() {
					e.stdout.Write([]byte("FAIL\n"))
					return exitFound
				}
			}
			return exitOK
		}
	}
	return c
}

// testFiles expands paths into the sorted test files they name: a .wf
// file stands for the test file beside it, any other file for itself, a
// directory for every test file below it.
func testFiles(e *env, paths []string) ([]string, bool) {
	var files []string
	ok := true
	for _, p := range paths {
		info, err := stat(p)
		if err != nil {
			e.errorf("%v", err)
			ok = false
			continue
		}
		if !info.IsDir() {
			if strings.HasSuffix(p, ".wf") {
				p = strings.TrimSuffix(p, ".wf") + wftest.Ext
				if _, err := stat(p); err != nil {
					e.errorf("%v", err)
					ok = false
					continue
				}
			}
			files = append(files, filepath.Clean(p))
			continue
		}
		err = compiler.Walk(p, wftest.Ext, func(path string, err error) error {
			if err != nil {
				return err
			}
			files = append(files, path)
			return nil
		})
		if err != nil {
			e.errorf("%v", err)
			ok = false
		}
	}
	if ok && len(files) == 0 {
		e.errorf("no %s files in %s", wftest.Ext, strings.Join(paths, ", "))
		ok = false
	}
	slices.Sort(files)
	return slices.Compact(files), ok
}

// tester runs test files.
type tester struct {
	e        *env
	filter   *regexp.Regexp
	opts     wftest.Options
	parallel int
	timeout  time.Duration
	updated  [][]byte // with --update: each file's new text

	mu       sync.Mutex
	sources  map[string][]compiler.Source // directory → its .wf files; nil when they do not compile
	programs map[string]*compiled         // directory and environment → the program
}

// compiled is a program compiled once, when a test first needs it.
type compiled struct {
	once sync.Once
	prog *vm.Program
}

// run runs every test of files, in parallel, and returns their results in
// the files' order.
func (t *tester) run(files []string) []*wftest.FileResult {
	t.sources, t.programs = map[string][]compiler.Source{}, map[string]*compiled{}
	results := make([]*wftest.FileResult, len(files))
	parsed := make([]*wftest.File, len(files))
	texts := make([][]byte, len(files))
	type job struct {
		file, test int
	}
	var jobs []job
	for i, name := range files {
		results[i] = &wftest.FileResult{Path: name}
		data, err := os.ReadFile(name)
		if err != nil {
			results[i].Err = err
			continue
		}
		texts[i] = data
		f, err := wftest.Parse(name, data)
		if err != nil {
			results[i].Err = err
			continue
		}
		dir := filepath.Dir(name)
		srcs, seen := t.sources[dir]
		if !seen {
			srcs = t.load(dir)
			t.sources[dir] = srcs
		}
		if srcs == nil {
			results[i].Err = &wftest.Error{File: name, Line: 1, Col: 1, Msg: "the workflows of " + dir + " do not compile"}
			continue
		}
		parsed[i] = f
		stem := strings.TrimSuffix(filepath.Base(name), wftest.Ext)
		for j, test := range f.Tests {
			if t.filter == nil || t.filter.MatchString(stem+"/"+test.Name) {
				jobs = append(jobs, job{i, j})
			}
		}
	}
	out := make([][]*wftest.Result, len(files))
	for i, f := range parsed {
		if f != nil {
			out[i] = make([]*wftest.Result, len(f.Tests))
		}
	}
	next := make(chan job)
	var wg sync.WaitGroup
	for range min(t.parallel, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				f := parsed[j.file]
				test := f.Tests[j.test]
				prog := t.program(filepath.Dir(f.Path), f.Env(test))
				ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
				out[j.file][j.test] = wftest.Run(ctx, prog, f, test, t.opts)
				cancel()
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	t.updated = make([][]byte, len(files))
	for i := range files {
		var updates []wftest.Update
		for _, r := range out[i] {
			if r != nil {
				results[i].Results = append(results[i].Results, r)
				updates = append(updates, r.Updates...)
			}
		}
		if len(updates) > 0 {
			t.updated[i] = wftest.Rewrite(texts[i], updates)
			results[i].Updated = len(updates)
		}
	}
	return results
}

// load reads the .wf files of dir and below and checks that they compile,
// reporting their diagnostics on stderr; nil when they have errors.
func (t *tester) load(dir string) []compiler.Source {
	files, ok := wfFiles(t.e, []string{dir})
	if !ok {
		return nil
	}
	srcs, ok := readSources(t.e, files)
	if !ok {
		return nil
	}
	_, diags := compiler.Compile(testRegistry(nil), srcs...)
	if diags.HasErrors() {
		diags.WriteText(t.e.stderr, fileSet(srcs))
		return nil
	}
	return srcs
}

// program is the program of dir compiled with env as the environment
// that env() reads: it is bound when the program is compiled.
func (t *tester) program(dir string, env map[string]string) *vm.Program {
	key := dir + "\x00" + jsonText(env)
	t.mu.Lock()
	c := t.programs[key]
	if c == nil {
		c = &compiled{}
		t.programs[key] = c
	}
	srcs := t.sources[dir]
	t.mu.Unlock()
	c.once.Do(func() {
		c.prog, _ = compiler.Compile(testRegistry(env), srcs...)
	})
	return c.prog
}

// testRegistry is the registry tests compile with: env() reads env alone.
func testRegistry(env map[string]string) *vm.Registry {
	reg := vm.NewRegistry()
	stdlib.RegisterWith(reg, stdlib.Options{Getenv: func(name string) string { return env[name] }})
	return reg
}
