package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit statuses.
const (
	exitOK    = 0 // success
	exitFound = 1 // errors found in the sources
	exitUsage = 2 // usage or I/O error
)

// command is one subcommand of aguic.
type command struct {
	name    string // "check"
	args    string // the synopsis after the name: "[--format text|json|github] [paths…]"
	summary string // one line for the command list
	doc     string // the paragraphs `aguic help name` prints before the flags

	// flags defines the command's flags on fs and returns the function that
	// runs the command once fs has parsed them, with the remaining arguments.
	flags func(fs *flag.FlagSet) func(e *env, args []string) int
}

// commands lists aguic's subcommands in the order help shows them.
func commands() []*command {
	return []*command{checkCommand(), fmtCommand(), graphCommand(), runCommand(), serveCommand(), backupCommand(), restoreCommand()}
}

func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// env is the world a command runs in.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// errorf reports a failure on stderr as `aguic: message`.
func (e *env) errorf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "aguic: "+format+"\n", args...)
}

// run is aguic without its process: args are the arguments after the
// program name; the result is the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		writeUsage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if name == "help" && len(rest) > 0 {
			return help(e, rest)
		}
		writeUsage(stdout)
		return exitOK
	}
	c := lookup(name)
	if c == nil {
		if strings.HasPrefix(name, "-") {
			fmt.Fprintf(stderr, "aguic: flag provided but not defined: %s\n", name)
		} else {
			fmt.Fprintf(stderr, "aguic: unknown command %q\n", name)
		}
		writeUsage(stderr)
		return exitUsage
	}
	fs := flag.NewFlagSet("aguic "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	runner := c.flags(fs)
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeCommandUsage(stdout, c)
			return exitOK
		}
		return usageError(e, c, "%v", err)
	}
	return runner(e, fs.Args())
}

// help prints the usage of the command named by args.
func help(e *env, args []string) int {
	if len(args) > 1 {
		fmt.Fprintf(e.stderr, "aguic help: too many arguments\nusage: aguic help [command]\n")
		return exitUsage
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(e.stderr, "aguic help: unknown command %q\n", args[0])
		writeUsage(e.stderr)
		return exitUsage
	}
	writeCommandUsage(e.stdout, c)
	return exitOK
}

// usageError reports a misused command: the message, then its synopsis.
func usageError(e *env, c *command, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "aguic %s: %s\nusage: aguic %s %s\nRun 'aguic help %s' for details.\n",
		c.name, fmt.Sprintf(format, args...), c.name, c.args, c.name)
	return exitUsage
}

func writeUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("aguic checks, formats, draws, runs and serves .wf workflows.\n\nUsage:\n\n\taguic <command> [arguments]\n\nThe commands are:\n\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "\t%-8s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'aguic help <command>' or 'aguic <command> -h' for a command's flags.\n")
	b.WriteString("Exit status: 0 success, 1 errors found, 2 usage or I/O error.\n")
	io.WriteString(w, b.String())
}

func writeCommandUsage(w io.Writer, c *command) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "usage: aguic %s %s\n\n%s\n", c.name, c.args, strings.TrimSpace(c.doc))
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.flags(fs)
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		b.WriteString("\nFlags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
	}
	w.Write(b.Bytes())
}
