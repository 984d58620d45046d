package main

import (
	"runtime/debug"
	"testing"
)

// TestVersionOf: a replica names the version the Makefile stamped, else its module's, and never Go's
// "(devel)"; the commit follows when the build recorded one.
func TestVersionOf(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}}
	for _, c := range []struct {
		name, stamped string
		bi            *debug.BuildInfo
		want          string
	}{
		{"stamped", "0.1.0", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "0.1.0"},
		{"stamped with commit", "0.1.0", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, "0.1.0+0123456789ab"},
		{"module version", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}}, "v0.2.0"},
		{"devel", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"devel with commit", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, "dev+0123456789ab"},
		{"no build info", "", nil, "dev"},
	} {
		if got := versionOf(c.stamped, c.bi); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
