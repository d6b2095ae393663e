package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/aguic/aguic/server"
)

func backupCommand() *command {
	c := &command{
		name:    "backup",
		args:    "[--data dir | --store url | --from url [--token token]] file",
		summary: "write a backup of the data directory",
		doc: `
Backup writes everything the data directory holds (threads, their events
and runs, the workflow versions conversations are pinned to) to file, or
to standard output when file is "-". The directory is --data; one that
does not exist or holds no store is an error. --store takes the backup
of a PostgreSQL database instead, while replicas go on serving from it.
A backup is in one format for every store: "aguic restore" loads it into
a data directory or a database alike. The backup is written beside
file and replaces it only once complete: a backup that fails leaves file
as it was. Restore the file with "aguic restore".

Only one process can use a data directory. While "aguic serve" uses it,
take the backup from the server instead: --from names the server's AG-UI
base URL (such as http://127.0.0.1:8080/agui) and --token the admin token
it was started with (the same variable, AGUIC_ADMIN_TOKEN, works for both).
The server writes a consistent backup while it goes on serving.`,
		examples: `
# Back up the data directory of a stopped server.
aguic backup --data /var/lib/aguic backup.bin
# Back up a PostgreSQL database that replicas serve from.
aguic backup --store postgres://aguic@db.example.com/aguic backup.bin
# Back up from a running server.
AGUIC_ADMIN_TOKEN=change-me aguic backup --from http://127.0.0.1:8080/agui backup.bin`,
		exit: "0 when the backup is written, 1 when taking it failed, 2 on a usage or I/O error (such as a data directory that does not exist).",
		vars: map[string]string{"token": "AGUIC_ADMIN_TOKEN"},
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		var at where
		at.define(fs, "")
		from := fs.String("from", "", "take the backup from the running server at this base `url`")
		token := fs.String("token", "", "the server's admin `token`, with --from")
		return func(e *env, args []string) int {
			if len(args) != 1 {
				return usageError(e, c, "backup needs one file to write")
			}
			if args[0] == "" {
				return usageError(e, c, "the file name is empty: name a file, or - for standard output")
			}
			// An interrupted backup leaves no partial file behind.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var src backupSource
			if *from != "" {
				src = remoteBackup{url: strings.TrimSuffix(*from, "/") + server.BackupPath, token: *token}
			} else {
				if !at.shared() {
					if err := checkDataDir(at.data); err != nil {
						e.errorf("%v", err)
						return exitUsage
					}
				}
				st, err := at.open(ctx, quietLog(e))
				if err != nil {
					e.errorf("%v", err)
					return exitUsage
				}
				defer st.Close()
				src = st
			}
			if args[0] == "-" {
				if err := src.Backup(ctx, e.stdout); err != nil {
					e.errorf("%v", err)
					return exitFound
				}
				return exitOK
			}
			out, err := createPending(args[0])
			if err != nil {
				e.errorf("%v", err)
				return exitUsage
			}
			if err := src.Backup(ctx, out); err != nil {
				out.abort()
				e.errorf("%v", err)
				return exitFound
			}
			if err := out.commit(); err != nil {
				e.errorf("%v", err)
				return exitUsage
			}
			return exitOK
		}
	}
	return c
}

// checkDataDir reports an error, naming dir, unless dir holds a store:
// a backup of a directory that is not a data directory (a typo, say)
// must neither succeed nor create one.
func checkDataDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the data directory %s does not exist", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("the data directory %s is not a directory", dir)
	}
	// Every store has a MANIFEST from the first time it was opened.
	if fi, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not an aguic data directory: it holds no store", dir)
	}
	return nil
}

// pendingFile is a file written under a temporary name beside its target
// path, which it replaces only once it is complete and synced: a backup
// that fails leaves the target as it was.
type pendingFile struct {
	*os.File
	target string
}

// createPending creates the temporary file of a new version of path. A
// path that is a symbolic link keeps it: the file it points to is
// replaced. An existing file's permissions carry over to the new version;
// a new file has those os.Create gives.
func createPending(path string) (*pendingFile, error) {
	mode, existed := fs.FileMode(0o666), false
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			if path, err = filepath.EvalSymlinks(path); err != nil {
				return nil, err
			}
			if fi, err = os.Stat(path); err != nil {
				return nil, err
			}
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", path)
		}
		mode, existed = fi.Mode().Perm(), true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	dir, base := filepath.Split(path)
	for try := 0; ; try++ {
		name := filepath.Join(dir, fmt.Sprintf(".%s.tmp-%d", base, rand.Uint32()))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		if err != nil {
			// The error names the file asked for, not its temporary name.
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = &fs.PathError{Op: pe.Op, Path: path, Err: pe.Err}
			}
			return nil, err
		}
		if existed {
			// The mode of the file it replaces, not subject to the umask.
			if err := f.Chmod(mode); err != nil {
				f.Close()
				os.Remove(name)
				return nil, err
			}
		}
		return &pendingFile{File: f, target: path}, nil
	}
}

// commit syncs the file and renames it over its target.
func (p *pendingFile) commit() error {
	err := p.Sync()
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(p.Name(), p.target)
	}
	if err != nil {
		os.Remove(p.Name())
		return err
	}
	// The rename lasts once the directory is synced; not every system
	// can sync a directory.
	if d, err := os.Open(filepath.Dir(p.target)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// abort removes the file; its target stays as it was.
func (p *pendingFile) abort() {
	p.Close()
	os.Remove(p.Name())
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
		detail := problemDetail(body)
		if detail == "" {
			detail = resp.Status
		}
		return fmt.Errorf("backup from %s: %s", r.url, detail)
	}
	// A 200 of anything else, such as the page a proxy or another server
	// answers every path with, must not replace a backup.
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/octet-stream") {
		return fmt.Errorf("backup from %s: the answer is %q, not a backup: --from takes the server's AG-UI base URL, such as http://127.0.0.1:8080/agui", r.url, ct)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

func restoreCommand() *command {
	c := &command{
		name:    "restore",
		args:    "[--data dir | --store url] file",
		summary: "restore a backup into an empty data directory or database",
		doc: `
Restore loads a file written by "aguic backup" (standard input when file is
"-") into the data directory, which must be empty or new: restoring never
mixes two histories. The directory is --data; --store restores into a
PostgreSQL database instead, which must hold no thread yet (its schema is
created when missing). A backup from a data directory restores into a
database and the other way round, backups written by earlier versions of
aguic included: that is how a data directory moves to PostgreSQL.`,
		examples: `
# Restore a backup into a new data directory, then serve it.
aguic restore --data restored backup.bin
aguic serve --data restored workflows
# Move a data directory into PostgreSQL.
aguic backup --data .aguic - | aguic restore --store postgres://aguic@db.example.com/aguic -`,
		exit: "0 when the backup is restored, 1 when restoring failed (the directory is not empty, the file is not a backup), 2 on a usage or I/O error.",
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		var at where
		at.define(fs, "")
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
			st, err := at.open(context.Background(), quietLog(e))
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
