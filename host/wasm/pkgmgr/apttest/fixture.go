package apttest

// The fixture packages, all named lexfix-* so none can be taken for a Debian package. Their
// repository names its suites as Debian's archives do (Origin Debian; the security suite labelled
// Debian-Security, suite and codename bookworm-security), so the shipped manifests' origin patterns
// apply to it unchanged.

// pkgSpec is one package version and the suite that offers it.
type pkgSpec struct {
	name, version, suite string
	depends              string
	files                map[string]fileSpec // path in the package -> content
	scripts              map[string]string   // postinst, preinst -> script
	triggers             string
}

type fileSpec struct {
	content string // literal content, or
	build   string // a file built by buildBinaries
	mode    uint32
}

// Suites of the repository.
const (
	SuiteBase     = "bookworm"
	SuiteSecurity = "bookworm-security"
	SuiteUpdates  = "bookworm-updates"
)

var suites = []struct{ name, label string }{
	{SuiteBase, "Debian"},
	{SuiteSecurity, "Debian-Security"},
	{SuiteUpdates, "Debian"},
}

// The packages tests name.
const (
	Lib    = "liblexfix1"    // 1.0 installed; 1.1 is its security fix
	Daemon = "lexfix-daemon" // links liblexfix1; a service (lexfix-daemon.service)
	Broken = "lexfix-broken" // 1.1 (security) fails in its postinst unless BrokenMayConfigure exists
	Held   = "lexfix-held"   // held at 1.0; 1.1 is a security fix the host must not install
	Tool   = "lexfix-tool"   // 1.1 is an ordinary update (bookworm-updates), not a security one
	Slow   = "lexfix-slow"   // its scripts wait on FIFOs, so a test can hold apt's lock, or stop a run, at a step
	Plugin = "lexfix-plugin" // 1.1 (security) depends on Extra, a new package offered only as an ordinary update
	Extra  = "lexfix-extra"
)

// DaemonUnit is the daemon's service.
const DaemonUnit = "lexfix-daemon.service"

// BrokenMayConfigure lets lexfix-broken 1.1's postinst succeed once it exists.
const BrokenMayConfigure = "/etc/lexfix/broken-may-configure"

// The FIFOs lexfix-slow's scripts use: each writes "<script> waiting" to SlowReady once it runs (apt
// and dpkg then hold their locks), then waits for a line on SlowGo. Without them nothing waits.
const (
	SlowReady = "/run/lexfix-slow.ready"
	SlowGo    = "/run/lexfix-slow.go"
)

// The fixture's C sources: a library whose version 1.1 replaces 1.0 at the same path, and a daemon
// linking it that prints the library's version at start and then waits for signals.
const (
	libSource = `int lexfix_version(void) { return VERSION; }
`
	daemonSource = `#include <stdio.h>
#include <unistd.h>
int lexfix_version(void);
int main(void) {
	printf("lexfix-daemon: liblexfix %d\n", lexfix_version());
	fflush(stdout);
	for (;;) pause();
}
`
)

const daemonUnit = `[Unit]
Description=Lexicon fixture daemon (links liblexfix)

[Service]
ExecStart=/usr/sbin/lexfix-daemon
Restart=on-failure

[Install]
WantedBy=multi-user.target
`

// daemonPostinst starts the service where a service manager runs, as a packaged service's does.
const daemonPostinst = `#!/bin/sh
set -e
if [ "$1" = configure ] && [ -d /run/systemd/system ]; then
	systemctl enable lexfix-daemon.service
	systemctl restart lexfix-daemon.service
fi
`

const brokenPostinst = `#!/bin/sh
set -e
if [ "$1" = configure ] && [ ! -e ` + BrokenMayConfigure + ` ]; then
	echo "lexfix-broken: this postinst fails (a fixture)" >&2
	exit 1
fi
`

// slowScript waits, when the test's FIFOs exist, after saying which script it is: lexfix-slow's
// preinst (1.0 and 1.1) and postinst (1.1), so a test can stop a run at either step.
func slowScript(name string) string {
	return `#!/bin/sh
set -e
if [ -p ` + SlowReady + ` ] && [ -p ` + SlowGo + ` ]; then
	echo "` + name + ` waiting" > ` + SlowReady + `
	read go < ` + SlowGo + `
fi
`
}

// packages returns every package version; multiarch is the library folder (x86_64-linux-gnu).
func packages(multiarch string) []pkgSpec {
	libPath := "/usr/lib/" + multiarch + "/liblexfix.so.1"
	lib := func(v, build, suite string) pkgSpec {
		return pkgSpec{name: Lib, version: v, suite: suite, triggers: "activate-noawait ldconfig\n",
			files: map[string]fileSpec{libPath: {build: build, mode: 0o644}}}
	}
	plain := func(name, v, suite string) pkgSpec {
		return pkgSpec{name: name, version: v, suite: suite,
			files: map[string]fileSpec{"/usr/share/lexfix/" + name: {content: name + " " + v + "\n", mode: 0o644}}}
	}
	broken := plain(Broken, "1.1", SuiteSecurity)
	broken.scripts = map[string]string{"postinst": brokenPostinst}
	slow := plain(Slow, "1.0", SuiteBase)
	slow.scripts = map[string]string{"preinst": slowScript("preinst")}
	slowFix := plain(Slow, "1.1", SuiteSecurity)
	slowFix.scripts = map[string]string{"preinst": slowScript("preinst"), "postinst": slowScript("postinst")}
	return []pkgSpec{
		lib("1.0", "liblexfix.so.1.0", SuiteBase),
		lib("1.1", "liblexfix.so.1.1", SuiteSecurity),
		{name: Daemon, version: "1.0", suite: SuiteBase, depends: Lib + " (>= 1.0)",
			files: map[string]fileSpec{
				"/usr/sbin/lexfix-daemon":           {build: "lexfix-daemon", mode: 0o755},
				"/lib/systemd/system/" + DaemonUnit: {content: daemonUnit, mode: 0o644},
			},
			scripts: map[string]string{"postinst": daemonPostinst}},
		plain(Broken, "1.0", SuiteBase), broken,
		plain(Held, "1.0", SuiteBase), plain(Held, "1.1", SuiteSecurity),
		plain(Tool, "1.0", SuiteBase), plain(Tool, "1.1", SuiteUpdates),
		slow, slowFix,
		plain(Plugin, "1.0", SuiteBase),
		func() pkgSpec { p := plain(Plugin, "1.1", SuiteSecurity); p.depends = Extra; return p }(),
		plain(Extra, "1.0", SuiteUpdates),
	}
}
