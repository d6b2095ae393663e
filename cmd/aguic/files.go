package main

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/mcplock"
)

// wfFiles expands paths into the sorted list of .wf files they name: a
// file stands for itself, whatever its extension; a directory for every
// *.wf file below it, hidden files and directories and node_modules left
// out. Names are cleaned but stay relative as given. It reports every I/O
// error on stderr, and a list that ends up empty as one, and returns
// ok=false after any.
func wfFiles(e *env, paths []string) (files []string, ok bool) {
	ok = true
	seen := map[string]bool{}
	add := func(name string) {
		name = filepath.Clean(name)
		if !seen[name] {
			seen[name] = true
			files = append(files, name)
		}
	}
	for _, p := range paths {
		info, err := stat(p)
		if err != nil {
			e.errorf("%v", err)
			ok = false
			continue
		}
		if !info.IsDir() {
			add(p)
			continue
		}
		err = compiler.Walk(p, ".wf", func(path string, err error) error {
			if err != nil {
				e.errorf("%v", err)
				ok = false
				return nil
			}
			add(path)
			return nil
		})
		if err != nil {
			e.errorf("%v", err)
			ok = false
		}
	}
	if ok && len(files) == 0 {
		e.errorf("no .wf files in %s", strings.Join(paths, ", "))
		ok = false
	}
	slices.Sort(files)
	return files, ok
}

// stat opens path to learn what it is, so a missing file reads as
// `open x.wf: no such file or directory`.
func stat(path string) (fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// readSources reads every file, and the lock file of MCP servers
// (mcplock.FileName) of each directory that holds one of them when it
// exists, reporting each failure on stderr; ok is false after any.
func readSources(e *env, files []string) (srcs []compiler.Source, ok bool) {
	return readSourcesWith(e, files, nil)
}

// readSourcesWith is readSources with the file buffer, when not nil, read
// already (from standard input): it stands for the file of its name among
// files, or is one more, and the lock of its directory is read too.
func readSourcesWith(e *env, files []string, buffer *compiler.Source) (srcs []compiler.Source, ok bool) {
	ok = true
	read := func(name string) {
		text, err := os.ReadFile(name)
		if err != nil {
			e.errorf("%v", err)
			ok = false
			return
		}
		srcs = append(srcs, compiler.Source{Name: name, Text: lang.Clean(text)})
	}
	dirs := map[string]bool{} // directory → whether its lock is read
	for _, name := range files {
		if buffer == nil || name != buffer.Name {
			read(name)
		}
		dir := filepath.Dir(name)
		dirs[dir] = dirs[dir] || filepath.Base(name) == mcplock.FileName
	}
	if buffer != nil {
		srcs = append(srcs, *buffer)
		if dir := filepath.Dir(buffer.Name); !strings.HasPrefix(buffer.Name, "<") {
			dirs[dir] = dirs[dir] || filepath.Base(buffer.Name) == mcplock.FileName
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		lock := filepath.Join(dir, mcplock.FileName)
		if _, err := os.Stat(lock); dirs[dir] || errors.Is(err, fs.ErrNotExist) {
			continue
		}
		read(lock)
	}
	return srcs, ok
}
