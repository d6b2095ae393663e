package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupNeedsADataDirectory: backup --data of a directory that does
// not exist, that is empty or that holds no store is a usage error naming
// the directory, and creates neither the directory nor the file.
func TestBackupNeedsADataDirectory(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, data, want string }{
		{"a directory that does not exist", filepath.Join(dir, "typo"), "does not exist"},
		{"an empty directory", empty, "holds no store"},
		{"a directory of other files", other, "holds no store"},
		{"a file", file, "not a directory"},
	} {
		out := filepath.Join(dir, "out.bin")
		var stdout, stderr bytes.Buffer
		c := run([]string{"backup", "--data", tt.data, out}, strings.NewReader(""), &stdout, &stderr)
		if c != exitUsage || !strings.Contains(stderr.String(), tt.data) || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%s: exit %d, %q; want %d and an error naming %s (%s)", tt.name, c, stderr.String(), exitUsage, tt.data, tt.want)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the backup file exists (%v)", tt.name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "typo")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("backup created the directory that did not exist (%v)", err)
	}
	if names := dirNames(t, empty); len(names) != 0 {
		t.Errorf("backup wrote %q into the empty directory", names)
	}
	if names := dirNames(t, other); len(names) != 1 {
		t.Errorf("backup wrote into a directory that is not a data directory: %q", names)
	}
}

// TestBackupOfADataDirectory: backup --data writes a backup of a data
// directory, replacing the file it names, and leaves nothing beside it.
func TestBackupOfADataDirectory(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	st, err := openData(data)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(out, "b.bin")
	if err := os.WriteFile(file, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if c := run([]string{"backup", "--data", data, file}, strings.NewReader(""), &stdout, &stderr); c != exitOK {
		t.Fatalf("backup: exit %d, %s", c, stderr.String())
	}
	got, err := os.ReadFile(file)
	if err != nil || !strings.HasPrefix(string(got), "aguic store backup") {
		t.Errorf("the file holds %q (%v)", got, err)
	}
	if names := dirNames(t, out); len(names) != 1 {
		t.Errorf("the directory holds %q, want the backup only", names)
	}
}

// failingSource writes part of a backup, then fails.
type failingSource struct{}

func (failingSource) Backup(_ context.Context, w io.Writer) error {
	io.WriteString(w, "aguic store backup 1\npartial")
	return errors.New("the disk went away")
}

// TestPendingFile: a file written through createPending replaces its
// target on commit only; abort leaves the target and its directory as they
// were. A symbolic link keeps pointing at the file it named.
func TestPendingFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "b.bin")
	if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := createPending(target)
	if err != nil {
		t.Fatal(err)
	}
	if err := (failingSource{}).Backup(context.Background(), p); err == nil {
		t.Fatal("no error")
	}
	p.abort()
	if got, _ := os.ReadFile(target); string(got) != "old" {
		t.Errorf("after abort the target holds %q", got)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("after abort the directory holds %q", names)
	}

	link := filepath.Join(dir, "link.bin")
	if err := os.Symlink("b.bin", link); err != nil {
		t.Skip("no symbolic links:", err)
	}
	if p, err = createPending(link); err != nil {
		t.Fatal(err)
	}
	io.WriteString(p, "new")
	if err := p.commit(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", fi.Mode(), err)
	}
	if got, _ := os.ReadFile(target); string(got) != "new" {
		t.Errorf("after commit the target holds %q", got)
	}
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the target's mode: %v, %v; want -rw-------", fi.Mode(), err)
	}
	if names := dirNames(t, dir); len(names) != 2 {
		t.Errorf("after commit the directory holds %q", names)
	}
}
