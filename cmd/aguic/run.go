package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
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

	// examples are command lines, each after a "# what it does" line,
	// that `aguic help name` prints after the flags; "" for none.
	examples string
	// exit says what each exit status of the command means.
	exit string
	// vars names the environment variable of each flag whose variable is
	// not the default one (envName); "" keeps a flag to the command line.
	vars map[string]string
	// fromVars names the variable of each flag fromEnv set.
	fromVars map[string]string

	// flags defines the command's flags on fs and returns the function that
	// runs the command once fs has parsed them, with the remaining arguments.
	flags func(fs *flag.FlagSet) func(e *env, args []string) int
}

// commands lists aguic's subcommands in the order help shows them.
func commands() []*command {
	return []*command{
		checkCommand(), fmtCommand(), lspCommand(), graphCommand(), runCommand(), testCommand(),
		serveCommand(), openapiCommand(), mcpCommand(), benchCommand(),
		backupCommand(), restoreCommand(), versionCommand(),
	}
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
	name           string // the command that runs; "" before one is known
	stdin          io.Reader
	stdout, stderr io.Writer
}

// errorf reports a failure on stderr as `aguic command: message`.
func (e *env) errorf(format string, args ...any) {
	prefix := "aguic: "
	if e.name != "" {
		prefix = "aguic " + e.name + ": "
	}
	fmt.Fprintf(e.stderr, prefix+format+"\n", args...)
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
	case "-version", "--version":
		name = "version"
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
	e.name = c.name
	fs := flag.NewFlagSet("aguic "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	runner := c.flags(fs)
	args, err := parseInterspersed(fs, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeCommandUsage(stdout, c)
			return exitOK
		}
		return usageError(e, c, "%v", err)
	}
	if err := c.fromEnv(fs, os.Getenv); err != nil {
		return usageError(e, c, "%v", err)
	}
	return runner(e, args)
}

// flagInError finds a flag's name in the flag package's errors.
var flagInError = regexp.MustCompile(`(for flag |not defined: |needs an argument: )-+([\w-]+)`)

// parseInterspersed parses the flags of args wherever they are, before or
// after the paths ("aguic check workflows --format json"), and returns the
// other arguments in order. "--" ends the flags: what follows it is kept
// as it is.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			// The flag package names flags with one dash; aguic's help
			// writes them with two.
			msg := flagInError.ReplaceAllStringFunc(err.Error(), func(m string) string {
				sub := flagInError.FindStringSubmatch(m)
				return sub[1] + flagName(sub[2])
			})
			return nil, errors.New(msg)
		}
		left := fs.Args()
		if used := len(args) - len(left); used > 0 && args[used-1] == "--" {
			return append(rest, left...), nil
		}
		if len(left) == 0 {
			return rest, nil
		}
		rest, args = append(rest, left[0]), left[1:]
	}
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

// usageError reports a misused command: the message (each of its lines
// after the command's name), then its synopsis.
func usageError(e *env, c *command, format string, args ...any) int {
	var b strings.Builder
	for _, line := range strings.Split(fmt.Sprintf(format, args...), "\n") {
		fmt.Fprintf(&b, "aguic %s: %s\n", c.name, line)
	}
	fmt.Fprintf(&b, "usage: aguic %s %s\nRun 'aguic help %s' for details.\n", c.name, c.args, c.name)
	io.WriteString(e.stderr, b.String())
	return exitUsage
}

func writeUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("aguic checks, formats, draws, runs and serves .wf workflows.\n\nUsage:\n\n\taguic <command> [arguments]\n\nThe commands are:\n\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "\t%-8s %s\n", c.name, c.summary)
	}
	b.WriteString(`
Run 'aguic help <command>' or 'aguic <command> -h' for a command's flags.
A flag may also come from the environment: AGUIC_DATA for --data, and so
on; each command's help names the variable of each flag.
Exit status: 0 success, 1 errors found, 2 usage or I/O error.
`)
	io.WriteString(w, b.String())
}

func writeCommandUsage(w io.Writer, c *command) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "usage: aguic %s %s\n\n%s\n", c.name, c.args, strings.TrimSpace(c.doc))
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.flags(fs)
	var all []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { all = append(all, f) })
	if len(all) > 0 {
		b.WriteString("\nFlags:\n")
		for _, f := range all {
			writeFlag(&b, c, f)
		}
		if note := c.envNote(all); note != "" {
			b.WriteString("\n" + note + "\n")
		}
	}
	if ex := strings.TrimSpace(c.examples); ex != "" {
		b.WriteString("\nExamples:\n\n")
		for _, line := range strings.Split(ex, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				b.WriteString("\t" + line)
			}
			b.WriteString("\n")
		}
	}
	if c.exit != "" {
		fmt.Fprintf(&b, "\n%s\n", wrap("Exit status: "+strings.TrimSpace(c.exit), 76))
	}
	w.Write(b.Bytes())
}

// writeFlag describes one flag: its name, argument and environment
// variable, then what it does and its default.
func writeFlag(b *bytes.Buffer, c *command, f *flag.Flag) {
	arg, usage := flag.UnquoteUsage(f)
	if isBool(f) {
		arg = ""
	}
	fmt.Fprintf(b, "  %s", flagName(f.Name))
	if arg != "" {
		fmt.Fprintf(b, " %s", arg)
	}
	if v := c.envName(f.Name); v != "" {
		fmt.Fprintf(b, "  $%s", v)
	}
	if def := defaultText(f); def != "" {
		usage += " (default " + def + ")"
	}
	b.WriteString("\n        " + strings.ReplaceAll(wrap(usage, 68), "\n", "\n        ") + "\n")
}

// flagName is how help writes a flag: -l for a one-letter flag (as gofmt
// does), --name for the others.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// defaultText is a flag's default as help shows it: quoted when it is a
// string, "" when it is the zero value.
func defaultText(f *flag.Flag) string {
	switch f.DefValue {
	case "", "false", "0", "0s", "[]":
		return ""
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if _, ok := g.Get().(string); ok {
			return fmt.Sprintf("%q", f.DefValue)
		}
	}
	return f.DefValue
}

// envNote is the paragraph after the flags that says how the environment
// sets them; "" when no flag reads it.
func (c *command) envNote(all []*flag.Flag) string {
	var only []string
	example, other := "", ""
	for _, f := range all {
		switch v := c.envName(f.Name); {
		case v == "":
			only = append(only, flagName(f.Name))
		case v != defaultEnvName(f.Name):
			other = ", unless another is named"
		case example == "":
			example = fmt.Sprintf(" (%s for %s)", v, flagName(f.Name))
		}
	}
	if len(only) == len(all) {
		return ""
	}
	sort.Strings(only)
	which := "Each flag"
	if len(only) > 0 {
		which += " but " + strings.Join(only, ", ")
	}
	return wrap(which+" may also be set by the environment variable beside its name:"+
		" AGUIC_ and the flag's name in capitals, dashes as underscores"+example+other+"."+
		" The command line wins over the environment, and the environment over the"+
		" default; an empty variable counts as unset.", 76)
}

// wrap breaks text into lines of at most width characters.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(text) {
		if i > 0 {
			if n+1+len(word) > width {
				b.WriteString("\n")
				n = 0
			} else {
				b.WriteString(" ")
				n++
			}
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}
