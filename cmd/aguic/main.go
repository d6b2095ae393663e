// Command aguic checks, formats, draws, runs and serves .wf workflows, and
// backs up and restores the data it keeps.
//
// Every command reads its flags with the standard flag package and reports
// through its exit status: 0 success, 1 problems found in the sources
// (errors, or files a check did not accept), 2 a usage or I/O error.
// Run `aguic help` for the list of commands.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
