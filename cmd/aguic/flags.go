package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// defaultEnvName is the environment variable of a flag: AGUIC_ and the
// flag's name in capitals, dashes as underscores (AGUIC_BASE_PATH for
// --base-path).
func defaultEnvName(flagName string) string {
	return "AGUIC_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// envName is the environment variable of the command's flag name: the one
// c.vars names, else the default one; "" when the flag is for the command
// line only.
func (c *command) envName(flagName string) string {
	if v, ok := c.vars[flagName]; ok {
		return v
	}
	return defaultEnvName(flagName)
}

// setting names the flag flagName in errors as it was set: its
// environment variable when fromEnv set it, else --flagName.
func (c *command) setting(flagName string) string {
	if v, ok := c.fromVars[flagName]; ok {
		return v
	}
	return "--" + flagName
}

// fromEnv sets every flag the command line left out to the value of its
// environment variable, when getenv finds one that is not empty. A value
// is checked as the same text on the command line is; the error names the
// variable, one line for each bad value: a boolean says what it takes.
func (c *command) fromEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := c.envName(f.Name)
		if given[f.Name] || name == "" {
			return
		}
		text := getenv(name)
		if text == "" {
			return
		}
		switch err := fs.Set(f.Name, text); {
		case err == nil:
			if c.fromVars == nil {
				c.fromVars = map[string]string{}
			}
			c.fromVars[f.Name] = name
		case isBool(f):
			// strconv.ParseBool takes 1, t, T, TRUE, true, True and
			// their opposites.
			errs = append(errs, fmt.Errorf("%s=%s: want true or false", name, text))
		default:
			errs = append(errs, fmt.Errorf("invalid value %q for %s: %v", text, name, err))
		}
	})
	return errors.Join(errs...)
}

// isBool reports whether f is a boolean flag, which takes no argument.
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// checked is a flag whose text parse turns into its value, and checks, as
// it is set: a bad value from the command line or from the environment is
// refused alike, before the command starts.
type checked[T any] struct {
	p     *T
	parse func(string) (T, error)
	text  string // the text of the value, as given
}

func (v *checked[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p, v.text = x, s
	return nil
}

func (v *checked[T]) String() string {
	if v == nil {
		return ""
	}
	return v.text
}

func (v *checked[T]) Get() any { return *v.p }

// checkedVar defines a checked flag: *p holds its default already, and def
// is that default as text ("" for none worth showing).
func checkedVar[T any](fs *flag.FlagSet, p *T, name, def, usage string, parse func(string) (T, error)) {
	fs.Var(&checked[T]{p: p, parse: parse, text: def}, name, usage)
}

// positive parses a whole number of at least 1.
func positive(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, errors.New("not a positive whole number")
	}
	return n, nil
}

// atMost parses a whole number from 1 to most.
func atMost(most int) func(string) (int, error) {
	return func(s string) (int, error) {
		n, err := positive(s)
		if err == nil && n > most {
			return 0, fmt.Errorf("more than %d", most)
		}
		return n, err
	}
}

// durationAtLeast parses a duration of at least least: 0 allows "0" (none),
// 1ns asks for a positive one.
func durationAtLeast(least time.Duration) func(string) (time.Duration, error) {
	return func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil || d < least {
			if least > 0 {
				return 0, errors.New("not a positive duration such as 30s, 10m or 1h")
			}
			if err == nil {
				return 0, errors.New("a duration must not be negative (0 means none)")
			}
			return 0, errors.New("not a duration such as 30s, 10m or 1h")
		}
		return d, nil
	}
}
