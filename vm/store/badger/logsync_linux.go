package badger

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncData writes the file's data, and of its metadata what reading the
// data needs (not its times), to the disk.
func syncData(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
