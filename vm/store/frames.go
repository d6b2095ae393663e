package store

import (
	"container/list"
	"sync"

	"github.com/aguic/aguic/vm"
)

// Frames keeps the frames of the threads that ran last, as their runs left
// them, so that the next turn of a conversation does not read and decode
// its frame again. An entry is good for one version of its thread: Begin
// uses it only when the lease it holds was granted at that version (no one
// wrote the thread since). It holds at most a number of bytes of frames,
// each counted as about the memory it takes (decodedSize times what the
// store keeps of it), and drops the least recently used. Safe for concurrent use; a nil
// *Frames keeps nothing.
type Frames struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // of *cached, the most recently used first
	index map[Key]*list.Element
}

// cached is a thread as its last run left it.
type cached struct {
	th    Thread // its bookkeeping after that run's last commit, without frame and deltas
	frame *vm.Frame
	base  int // the size of the stored frame
	sizes []int
}

// decodedSize is about how many bytes of memory a frame takes per byte of
// its JSON, once decoded into maps and lists.
const decodedSize = 8

// size is about how much memory c holds.
func (c *cached) size() int {
	n := c.base
	for _, s := range c.sizes {
		n += s
	}
	return n * decodedSize
}

// NewFrames returns a cache of at most max bytes of frames.
func NewFrames(max int) *Frames {
	return &Frames{max: max, order: list.New(), index: map[Key]*list.Element{}}
}

// take removes and returns the entry of k if it is of version; nil
// otherwise (an entry of another version is dropped).
func (fs *Frames) take(k Key, version uint64) *cached {
	if fs == nil {
		return nil
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	e := fs.index[k]
	if e == nil {
		return nil
	}
	c := e.Value.(*cached)
	fs.remove(e)
	if c.th.Version != version {
		return nil
	}
	return c
}

// put keeps c, the newest entry of its thread.
func (fs *Frames) put(c *cached) {
	if fs == nil {
		return
	}
	size := c.size()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if e := fs.index[c.th.Key]; e != nil {
		fs.remove(e)
	}
	if size > fs.max {
		return
	}
	fs.index[c.th.Key] = fs.order.PushFront(c)
	fs.size += size
	for fs.size > fs.max {
		fs.remove(fs.order.Back())
	}
}

// drop forgets the entry of k.
func (fs *Frames) drop(k Key) {
	if fs == nil {
		return
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if e := fs.index[k]; e != nil {
		fs.remove(e)
	}
}

func (fs *Frames) remove(e *list.Element) {
	c := e.Value.(*cached)
	fs.order.Remove(e)
	delete(fs.index, c.th.Key)
	fs.size -= c.size()
}
