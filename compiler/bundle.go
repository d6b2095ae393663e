package compiler

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/rogpeppe/go-internal/txtar"
)

// Bundle packs a program's sources into one archive, sorted by name, and
// returns it with its content hash: the version of the program. A
// suspended conversation pins that hash; Unbundle gives the sources back to
// compile the same version again after the files changed.
func Bundle(srcs []Source) (data []byte, hash string) {
	sorted := slices.Clone(srcs)
	slices.SortFunc(sorted, func(a, b Source) int { return strings.Compare(a.Name, b.Name) })
	ar := &txtar.Archive{Comment: []byte("aguic program v1\n")}
	for _, s := range sorted {
		ar.Files = append(ar.Files, txtar.File{Name: s.Name, Data: s.Text})
	}
	data = txtar.Format(ar)
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:])
}

// Unbundle reads the sources of a bundle made by Bundle.
func Unbundle(data []byte) ([]Source, error) {
	ar := txtar.Parse(data)
	if string(ar.Comment) != "aguic program v1\n" {
		return nil, fmt.Errorf("not an aguic program bundle")
	}
	srcs := make([]Source, len(ar.Files))
	for i, f := range ar.Files {
		srcs[i] = Source{Name: f.Name, Text: f.Data}
	}
	return srcs, nil
}
