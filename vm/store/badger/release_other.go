//go:build !linux

package badger

// releaseMapped does nothing where the store cannot ask for mapped pages
// to be reclaimed; the kernel reclaims them when it needs the memory.
func releaseMapped(string) (int64, error) { return 0, nil }
