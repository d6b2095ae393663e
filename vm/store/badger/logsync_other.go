//go:build !linux

package badger

import "os"

// syncData writes the file to the disk.
func syncData(f *os.File) error { return f.Sync() }
