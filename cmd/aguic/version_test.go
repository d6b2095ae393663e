package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestBuildVersion: the module's version when there is one, else "devel"
// with the commit, its time and whether the work tree was modified.
func TestBuildVersion(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "e53d187d9c1b8923844e2f69d4b8b38da8eb1891"},
		{Key: "vcs.time", Value: "2025-06-01T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	platform := "built with go1.26.0 for " + runtime.GOOS + "/" + runtime.GOARCH + "\nspeaks AG-UI 1.0\n"
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build information", nil, "aguic version devel\nbuilt with " + runtime.Version() + " for " + runtime.GOOS + "/" + runtime.GOARCH + "\nspeaks AG-UI 1.0\n"},
		{"installed", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}}, "aguic version v1.2.3\n" + platform},
		{"a checkout", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: vcs}, "aguic version devel e53d187d9c1b 2025-06-01T10:00:00Z (modified)\n" + platform},
		{"a checkout, as go 1.24 and later stamp it", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-20250601100000-e53d187d9c1b+dirty"}, Settings: vcs}, "aguic version devel e53d187d9c1b 2025-06-01T10:00:00Z (modified)\n" + platform},
		{"a release's tag", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.0"}, Settings: vcs[:3]}, "aguic version v1.2.0\n" + platform},
		{"a commit after a tag", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.1-0.20250601100000-e53d187d9c1b"}, Settings: vcs[:3]}, "aguic version devel e53d187d9c1b 2025-06-01T10:00:00Z\n" + platform},
		{"a commit after a pre-release's tag", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.3.0-rc.1.0.20250601100000-e53d187d9c1b"}, Settings: vcs[:3]}, "aguic version devel e53d187d9c1b 2025-06-01T10:00:00Z\n" + platform},
		{"a pre-release's tag", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.3.0-rc.1"}, Settings: vcs[:3]}, "aguic version v1.3.0-rc.1\n" + platform},
		{"a clean checkout", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: vcs[:3]}, "aguic version devel e53d187d9c1b 2025-06-01T10:00:00Z\n" + platform},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := buildVersion(tc.bi).text(); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	v := buildVersion(&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: vcs})
	if v.Version != "devel" || v.Revision != "e53d187d9c1b8923844e2f69d4b8b38da8eb1891" || !v.Modified || v.AGUI != "1.0" || v.Go != "go1.26.0" {
		t.Errorf("JSON fields %+v", v)
	}
}
