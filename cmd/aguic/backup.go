package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/aguic/aguic/server"
)

func backupCommand() *command {
	c := &command{
		name:    "backup",
		args:    "[--data dir | --from url [--token token]] file",
		summary: "write a backup of the data directory",
		doc: `
Backup writes everything the data directory holds (threads, their events
and runs, the workflow versions conversations are pinned to) to file, or
to standard output when file is "-". The directory is --data. Restore the
file with "aguic restore".

Only one process can use a data directory. While "aguic serve" uses it,
take the backup from the server instead: --from names the server's AG-UI
base URL (such as http://127.0.0.1:8080/agui) and --token the admin token
it was started with (the same variable, AGUIC_ADMIN_TOKEN, works for both).
The server writes a consistent backup while it goes on serving.`,
		examples: `
# Back up the data directory of a stopped server.
aguic backup --data /var/lib/aguic backup.bin
# Back up from a running server.
AGUIC_ADMIN_TOKEN=change-me aguic backup --from http://127.0.0.1:8080/agui backup.bin`,
		exit: "0 when the backup is written, 1 when taking it failed, 2 on a usage or I/O error.",
		vars: map[string]string{"token": "AGUIC_ADMIN_TOKEN"},
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		data := fs.String("data", defaultData, "the data `dir`ectory")
		from := fs.String("from", "", "take the backup from the running server at this base `url`")
		token := fs.String("token", "", "the server's admin `token`, with --from")
		return func(e *env, args []string) int {
			if len(args) != 1 {
				return usageError(e, c, "backup needs one file to write")
			}
			var src backupSource
			if *from != "" {
				src = remoteBackup{url: strings.TrimSuffix(*from, "/") + server.BackupPath, token: *token}
			} else {
				st, err := openData(*data)
				if err != nil {
					e.errorf("%v", err)
					return exitUsage
				}
				defer st.Close()
				src = st
			}
			var w io.Writer = e.stdout
			var f *os.File
			if args[0] != "-" {
				var err error
				if f, err = os.Create(args[0]); err != nil {
					e.errorf("%v", err)
					return exitUsage
				}
				w = f
			}
			err := src.Backup(context.Background(), w)
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

// backupSource is where a backup comes from: a data directory, or a
// running server.
type backupSource interface {
	Backup(ctx context.Context, w io.Writer) error
}

// remoteBackup downloads a backup from a running server.
type remoteBackup struct{ url, token string }

func (r remoteBackup) Backup(ctx context.Context, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return err
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var p struct{ Detail string }
		if json.Unmarshal(body, &p) == nil && p.Detail != "" {
			return fmt.Errorf("backup from %s: %s", r.url, p.Detail)
		}
		return fmt.Errorf("backup from %s: %s", r.url, resp.Status)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

func restoreCommand() *command {
	c := &command{
		name:    "restore",
		args:    "[--data dir] file",
		summary: "restore a backup into an empty data directory",
		doc: `
Restore loads a file written by "aguic backup" (standard input when file is
"-") into the data directory, which must be empty or new: restoring never
mixes two histories. The directory is --data.`,
		examples: `
# Restore a backup into a new data directory, then serve it.
aguic restore --data restored backup.bin
aguic serve --data restored workflows`,
		exit: "0 when the backup is restored, 1 when restoring failed (the directory is not empty, the file is not a backup), 2 on a usage or I/O error.",
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		data := fs.String("data", defaultData, "the data `dir`ectory")
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
			st, err := openData(*data)
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
