package badger

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// releaseMapped asks the kernel to reclaim the resident pages of the files
// in dir that the process maps into its memory: Badger reads and writes its
// tables and logs through shared memory maps, and every page of them that
// a compaction or a read touched stays resident, and counts in the
// process's RSS, until the kernel needs the memory. Dirty pages stay until
// they are written; the next read of a page brings it back from the file.
//
// MADV_PAGEOUT (Linux 5.4) only ever moves pages out, whatever the range
// holds, so a mapping that Badger unmaps meanwhile, and whatever is mapped
// at its address after it, come to no harm.
func releaseMapped(dir string) (released int64, err error) {
	if dir == "" {
		return 0, nil
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	prefix := []byte(dir + string(filepath.Separator))
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// start-end perms offset dev inode path
		f := bytes.Fields(sc.Bytes())
		if len(f) < 6 || !bytes.HasPrefix(f[5], prefix) {
			continue
		}
		span := bytes.SplitN(f[0], []byte("-"), 2)
		if len(span) != 2 {
			continue
		}
		start, err1 := strconv.ParseUint(string(span[0]), 16, 64)
		end, err2 := strconv.ParseUint(string(span[1]), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		_, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_PAGEOUT)
		switch errno {
		case 0:
			released += int64(end - start)
		case unix.EINVAL:
			return released, errno // a kernel before 5.4
		}
		// ENOMEM: Badger unmapped the file meanwhile.
	}
	return released, sc.Err()
}
