package main

import (
	"context"
	"flag"
	"io"
	"os"
)

func backupCommand() *command {
	c := &command{
		name:    "backup",
		args:    "[--data dir] file",
		summary: "write a backup of the data directory",
		doc: `
Backup writes everything the data directory holds (threads, their events
and runs, the workflow versions conversations are pinned to) to file, or
to standard output when file is "-". The directory is --data, or
AGUIC_DATA, or .aguic under the working directory. Restore the file with
"aguic restore".`,
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		data := fs.String("data", "", "the data `dir`ectory (default $AGUIC_DATA, else .aguic)")
		return func(e *env, args []string) int {
			if len(args) != 1 {
				return usageError(e, c, "backup needs one file to write")
			}
			st, err := openData(dataDir(*data))
			if err != nil {
				e.errorf("%v", err)
				return exitUsage
			}
			defer st.Close()
			var w io.Writer = e.stdout
			var f *os.File
			if args[0] != "-" {
				if f, err = os.Create(args[0]); err != nil {
					e.errorf("%v", err)
					return exitUsage
				}
				w = f
			}
			err = st.Backup(context.Background(), w)
			if f != nil {
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				e.errorf("%v", err)
				return exitFound
			}
			return exitOK
		}
	}
	return c
}

func restoreCommand() *command {
	c := &command{
		name:    "restore",
		args:    "[--data dir] file",
		summary: "restore a backup into an empty data directory",
		doc: `
Restore loads a file written by "aguic backup" (standard input when file is
"-") into the data directory, which must be empty or new: restoring never
mixes two histories. The directory is --data, or AGUIC_DATA, or .aguic
under the working directory.`,
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		data := fs.String("data", "", "the data `dir`ectory (default $AGUIC_DATA, else .aguic)")
		return func(e *env, args []string) int {
			if len(args) != 1 {
				return usageError(e, c, "restore needs one file to read")
			}
			var r io.Reader = e.stdin
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					e.errorf("%v", err)
					return exitUsage
				}
				defer f.Close()
				r = f
			}
			st, err := openData(dataDir(*data))
			if err != nil {
				e.errorf("%v", err)
				return exitUsage
			}
			defer st.Close()
			if err := st.Restore(context.Background(), r); err != nil {
				e.errorf("%v", err)
				return exitFound
			}
			return exitOK
		}
	}
	return c
}
