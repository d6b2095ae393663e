package store

// Parts of a Turn the tests drive by hand.
func (t *Turn) Journal() *Journal { return t.j }

// Abandon stops the turn as a crash would: nothing more is written, and
// the lease stays as it was.
func (t *Turn) Abandon() { t.stop() }
