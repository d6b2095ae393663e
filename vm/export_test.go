package vm

// Abandoned is how many evaluations run on after their run gave up on
// them.
func Abandoned() int64 { return abandoned.Load() }
