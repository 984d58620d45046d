package pkgmgr

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTransientArgv: a change run as a transient unit is systemd-run with the program's fixed
// arguments after "--", its whole environment, its time cap as the unit's own, piped and waited on,
// and the root as RootDirectory= only when it is not "/". (TestAgentUnderItsUnit, plane/internal/e2e,
// runs it under a real systemd.)
func TestTransientArgv(t *testing.T) {
	argv := []string{aptGet, "-y", "install", "x=1"}
	got := transientArgv("lexicon-pkg-1.service", "/", 90*time.Second, env, argv)
	if got[0] != systemdRun {
		t.Fatalf("runs %s", got[0])
	}
	sep := slices.Index(got, "--")
	if sep < 0 || !slices.Equal(got[sep+1:], argv) {
		t.Fatalf("the program is not the argv after --: %q", got)
	}
	opts := got[1:sep]
	for _, want := range []string{"--pipe", "--wait", "--collect", "--quiet", "--service-type=exec", "--unit=lexicon-pkg-1.service",
		"--property=RuntimeMaxSec=90", "--setenv=DEBIAN_FRONTEND=noninteractive", "--setenv=PATH=/usr/sbin:/usr/bin:/sbin:/bin"} {
		if !slices.Contains(opts, want) {
			t.Errorf("no %s in %q", want, opts)
		}
	}
	for _, o := range opts {
		if strings.HasPrefix(o, "--property=RootDirectory=") {
			t.Errorf("a run on / sets %s", o)
		}
	}
	got = transientArgv("lexicon-pkg-2.service", "/srv/root", 10*time.Millisecond, env, argv)
	if !slices.Contains(got, "--property=RootDirectory=/srv/root") || !slices.Contains(got, "--property=RuntimeMaxSec=1") {
		t.Errorf("a run in another root: %q", got)
	}
}
