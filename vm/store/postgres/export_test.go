package postgres

// DumpThreads is how many threads one page of Dump reads.
const DumpThreads = dumpThreads
