package word

import "github.com/lexicon-fleet/lexicon/sdk/word/capv1"

// The shapes the backup capabilities answer with, under their SDK names.
type (
	BackupRun      = capv1.BackupBeginResult
	BackupFiles    = capv1.BackupPathsResult
	BackupDump     = capv1.BackupDatabaseResult
	BackupCommit   = capv1.BackupCommitResult
	BackupVerified = capv1.BackupVerifyResult
	BackupRestore  = capv1.BackupRestore
	BackupRestored = capv1.BackupRestoreResult
)

// Backups is backup.begin, backup.paths, backup.database, backup.commit, backup.verify and
// backup.restore. The host does the work, with the grant the plane gave the job; the word says what
// and in which order. A run is a restore point only once Commit answers.
type Backups struct{}

// Backup returns the backup client.
func Backup() Backups { return Backups{} }

// Begin starts the job's run: mode full, or incremental (on the parent run the grant names, when this
// node holds its index; otherwise the run is full and BackupRun.Reason says why).
func (Backups) Begin(mode string) (BackupRun, error) {
	var out BackupRun
	err := Call(capv1.BackupBegin{Cap: capv1.CapBackupBegin, Mode: mode}, &out)
	return out, err
}

// Paths stores the files beneath the given folders as the run's files.
func (Backups) Paths(paths ...string) (BackupFiles, error) {
	var out BackupFiles
	err := Call(capv1.BackupPaths{Cap: capv1.CapBackupPaths, Paths: paths}, &out)
	return out, err
}

// Database dumps one PostgreSQL database into the run.
func (Backups) Database(name string) (BackupDump, error) {
	var out BackupDump
	err := Call(capv1.BackupDatabase{Cap: capv1.CapBackupDatabase, Database: name}, &out)
	return out, err
}

// Commit writes the run's index and its manifest, last.
func (Backups) Commit() (BackupCommit, error) {
	var out BackupCommit
	err := Call(capv1.BackupCommit{Cap: capv1.CapBackupCommit}, &out)
	return out, err
}

// Verify reads back the chain of runs the job's grant names and checks all of it.
func (Backups) Verify() (BackupVerified, error) {
	var out BackupVerified
	err := Call(capv1.BackupVerify{Cap: capv1.CapBackupVerify}, &out)
	return out, err
}

// Restore restores the last run of the job's grant: files into an empty or new folder, or a database
// into one that does not exist yet.
func (Backups) Restore(req BackupRestore) (BackupRestored, error) {
	req.Cap = capv1.CapBackupRestore
	var out BackupRestored
	err := Call(req, &out)
	return out, err
}
