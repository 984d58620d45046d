package errcode

// Codes of the pkg.* capabilities, the system package manager as the host runs it for a word (apt and
// dpkg on Debian). The area is open, like capability: a word passes these answers on as its own
// failure. Every refusal below is decided before apt or dpkg runs, so nothing changed; only pkg.failed
// and pkg.refresh_failed say something may have.
const (
	// PkgLocked: another apt or dpkg run holds the package manager's lock (details.path names the lock,
	// details.pid and details.command its holder when the host can tell). Nothing was run; the host
	// never waits for the lock, so try again when that run has ended.
	PkgLocked = "pkg.locked"
	// PkgOperationRefused: the node's policy does not allow this package operation
	// (details.operation), whatever the word's manifest declares. Nothing was run.
	PkgOperationRefused = "pkg.operation_refused"
	// PkgOriginRefused: the upgrade would install a version (details.package, details.version) from
	// an origin (details.origin) that the word's manifest or the node's policy does not allow
	// (details.reason says which). This covers every package the upgrade would bring, not only those
	// asked for. Nothing was installed.
	PkgOriginRefused = "pkg.origin_refused"
	// PkgNameRefused: a package name (details.package) matches none of the word's manifest's patterns,
	// or none of the node's policy's (details.reason says which); this covers every package the
	// upgrade would bring. Nothing was installed.
	PkgNameRefused = "pkg.name_refused"
	// PkgHeld: the package asked for (details.package) is held by the machine's admin (apt-mark hold),
	// and the host never overrides a hold. Nothing was installed.
	PkgHeld = "pkg.held"
	// PkgNotInstalled: the package asked for (details.package) is not installed; an upgrade only
	// upgrades. Nothing was installed.
	PkgNotInstalled = "pkg.not_installed"
	// PkgWouldRemove: the upgrade would remove packages (details.packages); the host only lets an
	// upgrade add and replace. Nothing was installed.
	PkgWouldRemove = "pkg.would_remove"
	// PkgUnresolvable: the package manager cannot plan the upgrade (unmet dependencies, a version no
	// longer offered); its message is in details.reason. Nothing was installed.
	PkgUnresolvable = "pkg.unresolvable"
	// PkgFailed: apt or dpkg ran and failed part way: a maintainer script failed, or a download broke
	// off (details.exit_code; details.packages lists the packages left half-configured or
	// half-installed). What was installed before the failure stays installed; finishing the run
	// (pkg.repair, dpkg --configure -a) configures what can be configured.
	PkgFailed = "pkg.failed"
	// PkgRefreshFailed: refreshing the package lists failed for some sources (details.reason). Lists
	// that were fetched replaced the old ones; the others were kept as they were.
	PkgRefreshFailed = "pkg.refresh_failed"
)

var areaPkg = Area{Name: "pkg", Reserved: false, Codes: []Spec{
	{PkgLocked, statusConflict, Unchanged},
	{PkgOperationRefused, statusBadRequest, Unchanged},
	{PkgOriginRefused, statusBadRequest, Unchanged},
	{PkgNameRefused, statusBadRequest, Unchanged},
	{PkgHeld, statusConflict, Unchanged},
	{PkgNotInstalled, statusNotFound, Unchanged},
	{PkgWouldRemove, statusConflict, Unchanged},
	{PkgUnresolvable, statusConflict, Unchanged},
	{PkgFailed, statusBadRequest, MaybeChanged},
	{PkgRefreshFailed, statusBadGateway, PartlyChanged},
}}
