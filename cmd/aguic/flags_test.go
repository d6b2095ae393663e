package main

import (
	"bytes"
	"flag"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestFromEnv: a flag on the command line wins over its environment
// variable, which wins over the default; an empty variable counts as
// unset; a command may name another variable or keep a flag to the
// command line; a bad value is an error that names the variable.
func TestFromEnv(t *testing.T) {
	c := &command{name: "demo", vars: map[string]string{"token": "AGUIC_ADMIN_TOKEN", "format": ""}}
	define := func(fs *flag.FlagSet) (addr, token, format *string, n *int, on *bool) {
		addr = fs.String("base-path", "/agui", "")
		token = fs.String("token", "", "")
		format = fs.String("format", "text", "")
		n = new(int)
		checkedVar(fs, n, "keep-events", "", "", positive)
		on = fs.Bool("node-events", false, "")
		return
	}
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    string // base-path token format keep-events node-events
		wantErr string
	}{
		{"defaults", nil, nil, "/agui  text 0 false", ""},
		{"environment over defaults", nil, map[string]string{"AGUIC_BASE_PATH": "/env", "AGUIC_KEEP_EVENTS": "7", "AGUIC_NODE_EVENTS": "1"}, "/env  text 7 true", ""},
		{"command line over environment", []string{"--base-path", "/flag", "--keep-events", "3", "--node-events=false"}, map[string]string{"AGUIC_BASE_PATH": "/env", "AGUIC_KEEP_EVENTS": "7", "AGUIC_NODE_EVENTS": "true"}, "/flag  text 3 false", ""},
		{"empty is unset", nil, map[string]string{"AGUIC_BASE_PATH": ""}, "/agui  text 0 false", ""},
		{"another name", nil, map[string]string{"AGUIC_TOKEN": "no", "AGUIC_ADMIN_TOKEN": "yes"}, "/agui yes text 0 false", ""},
		{"command line only", nil, map[string]string{"AGUIC_FORMAT": "json"}, "/agui  text 0 false", ""},
		{"bad number", nil, map[string]string{"AGUIC_KEEP_EVENTS": "-2"}, "", `^invalid value "-2" for AGUIC_KEEP_EVENTS: not a positive whole number$`},
		{"bad boolean", nil, map[string]string{"AGUIC_NODE_EVENTS": "maybe"}, "", `^AGUIC_NODE_EVENTS=maybe: want true or false$`},
		{"every bad value", nil, map[string]string{"AGUIC_KEEP_EVENTS": "x", "AGUIC_NODE_EVENTS": "y"}, "", `(?s)AGUIC_KEEP_EVENTS.*\n.*AGUIC_NODE_EVENTS`},
		{"a bad value the command line overrides", []string{"--keep-events", "2"}, map[string]string{"AGUIC_KEEP_EVENTS": "x"}, "/agui  text 2 false", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("demo", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			addr, token, format, n, on := define(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := c.fromEnv(fs, func(name string) string { return tc.env[name] })
			if tc.wantErr != "" {
				if err == nil || !regexp.MustCompile(tc.wantErr).MatchString(err.Error()) {
					t.Fatalf("error %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join([]string{*addr, *token, *format, strconv.Itoa(*n), strconv.FormatBool(*on)}, " ")
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBoolFromEnv: every boolean variable of every command takes what
// strconv.ParseBool does, and another value is an error that says the
// variable, the value and what it takes.
func TestBoolFromEnv(t *testing.T) {
	n := 0
	for _, c := range commands() {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.flags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			name := c.envName(f.Name)
			if !isBool(f) || name == "" {
				return
			}
			n++
			for _, tc := range []struct{ value, wantErr string }{
				{"1", ""}, {"t", ""}, {"TRUE", ""}, {"0", ""}, {"F", ""}, {"false", ""},
				{"yes", name + "=yes: want true or false"},
				{"on", name + "=on: want true or false"},
			} {
				fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
				c.flags(fs)
				err := c.fromEnv(fs, func(v string) string {
					if v == name {
						return tc.value
					}
					return ""
				})
				if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
					t.Errorf("aguic %s, %s=%s: %v, want %q", c.name, name, tc.value, err, tc.wantErr)
				}
			}
		})
	}
	if n == 0 {
		t.Error("no command has a boolean variable")
	}
}

// TestSetting: a flag's setting is named as it was given: the variable
// fromEnv set it from, else the flag.
func TestSetting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, nil, "--webhook-secret"},
		{[]string{"--webhook-secret", "x"}, nil, "--webhook-secret"},
		{nil, map[string]string{"AGUIC_WEBHOOK_SECRET": "x"}, "AGUIC_WEBHOOK_SECRET"},
		{[]string{"--webhook-secret", "x"}, map[string]string{"AGUIC_WEBHOOK_SECRET": "y"}, "--webhook-secret"},
	} {
		c := serveCommand()
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.flags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := c.fromEnv(fs, func(name string) string { return tc.env[name] }); err != nil {
			t.Fatal(err)
		}
		if got := c.setting("webhook-secret"); got != tc.want {
			t.Errorf("args %q, env %v: %s, want %s", tc.args, tc.env, got, tc.want)
		}
	}
}

// TestCommandHelp checks every command's help: a summary, a doc, what its
// exit statuses mean; every flag described, in the synopsis and in the
// help with its environment variable; examples for the main commands.
func TestCommandHelp(t *testing.T) {
	main := map[string]bool{"check": true, "fmt": true, "graph": true, "run": true, "serve": true, "openapi": true, "bench": true, "backup": true}
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			if c.summary == "" || strings.HasSuffix(c.summary, ".") || strings.Contains(c.summary, "\n") {
				t.Errorf("summary %q: want one line without a final period", c.summary)
			}
			if strings.TrimSpace(c.doc) == "" {
				t.Error("no doc")
			}
			if c.exit == "" {
				t.Error("no exit statuses")
			}
			if main[c.name] && strings.TrimSpace(c.examples) == "" {
				t.Error("no examples")
			}
			var help bytes.Buffer
			writeCommandUsage(&help, c)
			fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
			c.flags(fs)
			fs.VisitAll(func(f *flag.Flag) {
				if _, usage := flag.UnquoteUsage(f); usage == "" {
					t.Errorf("%s has no description", flagName(f.Name))
				}
				if !strings.Contains(c.args, "["+flagName(f.Name)) && !strings.Contains(c.args, flagName(f.Name)+" ") {
					t.Errorf("%s is not in the synopsis %q", flagName(f.Name), c.args)
				}
				line := "\n  " + flagName(f.Name)
				if v := c.envName(f.Name); v != "" {
					if !regexp.MustCompile(regexp.QuoteMeta(line) + `( \S+)?  \$` + v + "\n").MatchString(help.String()) {
						t.Errorf("the help has no line for %s with $%s:\n%s", flagName(f.Name), v, help.String())
					}
				} else if !strings.Contains(help.String(), line) {
					t.Errorf("the help has no line for %s", flagName(f.Name))
				}
			})
			for name := range c.vars {
				if fs.Lookup(name) == nil {
					t.Errorf("vars names the flag %q, which the command does not have", name)
				}
			}
			for _, section := range []string{"usage: aguic " + c.name + " ", "Exit status: "} {
				if !strings.Contains(help.String(), section) {
					t.Errorf("the help has no %q", section)
				}
			}
		})
	}
}

// TestParseInterspersed: flags may come after the paths, and "--" ends
// them.
func TestParseInterspersed(t *testing.T) {
	for _, c := range []struct {
		args   []string
		format string
		rest   []string
	}{
		{[]string{"a", "--format", "json", "b"}, "json", []string{"a", "b"}},
		{[]string{"--format=json", "a"}, "json", []string{"a"}},
		{[]string{"a", "b"}, "text", []string{"a", "b"}},
		{[]string{"a", "--", "--format", "b"}, "text", []string{"a", "--format", "b"}},
		{[]string{"-", "--format", "github"}, "github", []string{"-"}},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		format := fs.String("format", "text", "")
		rest, err := parseInterspersed(fs, c.args)
		if err != nil || *format != c.format || !slices.Equal(rest, c.rest) {
			t.Errorf("%q: format %q, rest %q, %v; want %q, %q", c.args, *format, rest, err, c.format, c.rest)
		}
	}
}
