package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/aguic/aguic/server/agui"
)

func versionCommand() *command {
	c := &command{
		name:    "version",
		args:    "[--json]",
		summary: "print the version of aguic",
		doc: `
Version prints the version of aguic, the Go version and platform it was
built with, and the AG-UI protocol version the server speaks. The version
is the module's (v1.2.3) when aguic was installed with go install or built
from a release's tag; built from any other commit it is "devel", with the
commit, its time, and "(modified)" when the work tree had changes.
"aguic --version" is the same command.

--json prints one object with the fields version, revision, time,
modified, go, os, arch and agui, for scripts; revision and time are empty
when the build has no version control information.`,
		examples: `
aguic version
aguic version --json`,
		exit: "0, or 2 on a usage error.",
		vars: map[string]string{"json": ""},
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		asJSON := fs.Bool("json", false, "print the version as a JSON object")
		return func(e *env, args []string) int {
			if len(args) > 0 {
				return usageError(e, c, "version takes no arguments")
			}
			bi, _ := debug.ReadBuildInfo()
			v := buildVersion(bi)
			if *asJSON {
				b, _ := json.MarshalIndent(v, "", "  ")
				fmt.Fprintf(e.stdout, "%s\n", b)
				return exitOK
			}
			fmt.Fprint(e.stdout, v.text())
			return exitOK
		}
	}
	return c
}

// version is what aguic version prints.
type version struct {
	Version  string `json:"version"`  // the module's version, or "devel"
	Revision string `json:"revision"` // the commit built from, when known
	Time     string `json:"time"`     // the commit's time, RFC 3339
	Modified bool   `json:"modified"` // the work tree had changes
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	AGUI     string `json:"agui"` // the AG-UI protocol version
}

// buildVersion reads the version from the build information bi (nil when
// the binary has none).
func buildVersion(bi *debug.BuildInfo) version {
	v := version{Version: "devel", Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, AGUI: agui.ProtocolVersion}
	if bi == nil {
		return v
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	// A build from a checkout has the commit's pseudo-version (or a tag's
	// version, with +dirty for a modified work tree): it says "devel" and
	// the commit instead, unless it is a release's clean tag.
	if m := bi.Main.Version; m != "" && m != "(devel)" && (v.Revision == "" || !checkoutVersion.MatchString(m)) {
		v.Version = m
	}
	return v
}

// checkoutVersion matches the versions the go command gives a build from a
// checkout that is not a release: a pseudo-version (v0.0.0-date-hash,
// v1.2.4-0.date-hash after v1.2.3, v1.2.3-pre.0.date-hash after
// v1.2.3-pre), or any version of a modified work tree.
var checkoutVersion = regexp.MustCompile(`(^v\d+\.\d+\.\d+-([0-9A-Za-z-]+\.)*\d{14}-[0-9a-f]{12}|\+dirty)$`)

// text is the version as lines for a terminal.
func (v version) text() string {
	line := []string{"aguic version", v.Version}
	if v.Version == "devel" {
		if v.Revision != "" {
			line = append(line, short(v.Revision))
		}
		if v.Time != "" {
			line = append(line, v.Time)
		}
		if v.Modified {
			line = append(line, "(modified)")
		}
	}
	return fmt.Sprintf("%s\nbuilt with %s for %s/%s\nspeaks AG-UI %s\n", strings.Join(line, " "), v.Go, v.OS, v.Arch, v.AGUI)
}
