package compiler

import (
	"io/fs"
	"path/filepath"
	"strings"
)

// Walk calls fn for every file below root whose name ends in ext (".wf",
// ".wftest"), in lexical order, and for every error reading the tree (with
// the path it was reading), as filepath.WalkDir does: what fn returns
// stops the walk, or skips a directory. Hidden files and directories and
// node_modules are left out, except root itself: these are the files of
// a project, as aguic check, aguic test and the language server find
// them.
func Walk(root, ext string, fn func(path string, err error) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fn(path, err)
		}
		hidden := path != root && strings.HasPrefix(d.Name(), ".")
		if d.IsDir() {
			if hidden || (path != root && d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if hidden || !strings.HasSuffix(d.Name(), ext) {
			return nil
		}
		return fn(path, nil)
	})
}
