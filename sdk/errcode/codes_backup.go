package errcode

// Codes of backups: the backup, verify and restore capabilities on the node answer them (a word passes
// them on), and the plane reports the same when it checks a target or a run. A backup run that ends with
// any of them wrote no manifest, so it is not a restore point; objects it had already uploaded under its
// own fresh keys stay in the bucket, uncounted, until the plane's retention removes them (hence
// maybe_changed). A restore that ends with any of them left its target as it was.
const (
	// BackupNotConfigured: the node's policy has no backup section, so it backs up, verifies and
	// restores nothing. Nothing was read or written.
	BackupNotConfigured = "backup.not_configured"
	// BackupPathRefused: a path to back up or restore into lies outside what the node's policy (and the
	// word's manifest) allow (details.path). Nothing was read or written.
	BackupPathRefused = "backup.path_refused"
	// BackupDatabaseRefused: the node's policy does not name the database (details.name). Nothing was
	// dumped or restored.
	BackupDatabaseRefused = "backup.database_refused"
	// BackupDatabaseMissing: the database does not exist on this machine's PostgreSQL (details.name).
	BackupDatabaseMissing = "backup.database_missing"
	// BackupDumpFailed: pg_dump, pg_restore, createdb or dropdb failed (details.exit_code, and the end of
	// what it wrote in the message).
	BackupDumpFailed = "backup.dump_failed"
	// BackupGrantMissing: the job carries no grant of the kind the capability needs (a write grant for a
	// backup, a read grant for verify and restore): only the plane hands them, to the host, never to the
	// word. Nothing was read or written.
	BackupGrantMissing = "backup.grant_missing"
	// BackupGrantInvalid: the grant is malformed, expired, or names a key outside its own prefix
	// (details.field). Nothing was read or written.
	BackupGrantInvalid = "backup.grant_invalid"
	// BackupGrantExhausted: the run needs more objects than the grant has fresh keys for (details.limit);
	// the next grant must hold more.
	BackupGrantExhausted = "backup.grant_exhausted"
	// BackupTargetRefused: the bucket refused the request (access denied, a read-only target, no such
	// bucket; details.provider_code and details.http_status say which).
	BackupTargetRefused = "backup.target_refused"
	// BackupCredentialsInvalid: the bucket did not accept the grant's signature or access key: the
	// target's credentials are wrong (details.provider_code).
	BackupCredentialsInvalid = "backup.credentials_invalid"
	// BackupTargetUnreachable: the bucket could not be reached, or answered with a server error.
	BackupTargetUnreachable = "backup.target_unreachable"
	// BackupObjectExists: the bucket already holds the key the run was to write (details.name): a run
	// never overwrites a key, so nothing was written there.
	BackupObjectExists = "backup.object_exists"
	// BackupObjectMissing: an object a run's manifest names is not in the bucket (details.name).
	BackupObjectMissing = "backup.object_missing"
	// BackupManifestInvalid: a manifest or index read from the bucket does not parse, or a chain of runs
	// does not hold together (details.field).
	BackupManifestInvalid = "backup.manifest_invalid"
	// BackupVerifyFailed: an object, a file or a database dump of the run is not what its manifest and
	// index say (details.name, details.path, details.reason): the run is not restorable as it stands.
	BackupVerifyFailed = "backup.verify_failed"
	// BackupNodeKeyMissing: the node has no backup key, so it cannot decrypt what it backed up (a
	// rebuilt machine): restore with the fleet's recovery key instead.
	BackupNodeKeyMissing = "backup.node_key_missing"
	// BackupRestoreTargetNotEmpty: a restore goes only into an empty or new folder, or a database that
	// does not exist yet (details.path or details.name). Nothing was written.
	BackupRestoreTargetNotEmpty = "backup.restore_target_not_empty"
	// BackupTargetExists: the plane already holds a target of that name (details.name). Nothing changed.
	BackupTargetExists = "backup.target_exists"
	// BackupTargetNotFound: the plane holds no target of that name (details.name).
	BackupTargetNotFound = "backup.target_not_found"
	// BackupKeepBelowFloor: a policy keeps runs for fewer days than the fleet's floor (details.limit):
	// no policy, and so no node, can shorten the history the plane keeps. Nothing changed.
	BackupKeepBelowFloor = "backup.keep_below_floor"
	// BackupRunNotFound: the node has no witnessed run of that id (details.name), or none at all, to
	// restore. Nothing was queued.
	BackupRunNotFound = "backup.run_not_found"
)

var areaBackup = Area{Name: "backup", Reserved: false, Codes: []Spec{
	{BackupNotConfigured, statusBadRequest, Unchanged},
	{BackupPathRefused, statusBadRequest, Unchanged},
	{BackupDatabaseRefused, statusBadRequest, Unchanged},
	{BackupDatabaseMissing, statusBadRequest, MaybeChanged},
	{BackupDumpFailed, statusBadGateway, MaybeChanged},
	{BackupGrantMissing, statusBadRequest, Unchanged},
	{BackupGrantInvalid, statusBadRequest, Unchanged},
	{BackupGrantExhausted, statusBadRequest, MaybeChanged},
	{BackupTargetRefused, statusBadGateway, MaybeChanged},
	{BackupCredentialsInvalid, statusBadGateway, MaybeChanged},
	{BackupTargetUnreachable, statusBadGateway, MaybeChanged},
	{BackupObjectExists, statusConflict, MaybeChanged},
	{BackupObjectMissing, statusNotFound, Unchanged},
	{BackupManifestInvalid, statusUnprocessable, Unchanged},
	{BackupVerifyFailed, statusUnprocessable, Unchanged},
	{BackupNodeKeyMissing, statusBadRequest, Unchanged},
	{BackupRestoreTargetNotEmpty, statusConflict, Unchanged},
	{BackupTargetExists, statusConflict, Unchanged},
	{BackupTargetNotFound, statusNotFound, Unchanged},
	{BackupKeepBelowFloor, statusBadRequest, Unchanged},
	{BackupRunNotFound, statusNotFound, Unchanged},
}}
