package server

import (
	"fmt"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/vm"
)

// SourceFile is the source file a workflow is written in, whole, and
// the lines of its workflow block in it.
type SourceFile struct {
	File      string `json:"file" doc:"The file's name, as the workflow's diagnostics and node spans name it."`
	Text      string `json:"text" doc:"The whole file."`
	StartLine int    `json:"startLine" doc:"The first line of the workflow block, from 1."`
	EndLine   int    `json:"endLine" doc:"The last line of the workflow block."`
}

// sourceFiles reads the files of a program's bundle (Config.Bundle) by
// name; none for no bundle.
func sourceFiles(bundle []byte) (map[string]string, error) {
	if len(bundle) == 0 {
		return nil, nil
	}
	srcs, err := compiler.Unbundle(bundle)
	if err != nil {
		return nil, fmt.Errorf("read the program's sources: %w", err)
	}
	files := make(map[string]string, len(srcs))
	for _, src := range srcs {
		files[src.Name] = string(src.Text)
	}
	return files, nil
}

// source is where w is written, in the current program's sources; nil
// when the server was given none, or they do not hold w's file.
func (s *Server) source(w *vm.Workflow) *SourceFile {
	text, ok := s.sources[w.Span.File]
	if !ok {
		return nil
	}
	return &SourceFile{File: w.Span.File, Text: text, StartLine: w.Span.Start.Line, EndLine: w.Span.End.Line}
}
