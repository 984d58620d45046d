package capv1

// The backup capabilities. A word orchestrates a run (begin, then paths and databases, then commit);
// the host does the work: it walks and reads the files, runs pg_dump, and encrypts and uploads what
// they give, natively, through the requests the plane presigned for the job. Those requests (the
// grant) are the host's: the word never sees a bucket, a URL or a credential.
//
// What may leave the machine is the node's to say: backup.paths reads only beneath the folders both
// the manifest's paths and the node policy's backup paths allow (backup.path_refused otherwise), and
// backup.database dumps only databases the node's policy names (backup.database_refused). A node
// without a backup section in its policy answers backup.not_configured to every backup call.
//
// A run becomes a restore point only when backup.commit has written its manifest, last. Any backup
// call of a run that fails fails the whole run: commit then refuses, and whatever was uploaded stays
// uncounted. A word that ends without commit leaves no restore point.
const (
	CapBackupBegin    = "backup.begin"
	CapBackupPaths    = "backup.paths"
	CapBackupDatabase = "backup.database"
	CapBackupCommit   = "backup.commit"
	CapBackupVerify   = "backup.verify"
	CapBackupRestore  = "backup.restore"
)

// Modes of a run.
const (
	BackupFull        = "full"
	BackupIncremental = "incremental"
)

// BackupBegin starts the run the job's grant is for. Mode incremental (the default) builds on the
// parent run the grant names when this node holds that run's index; otherwise, or with mode full, the
// run is a full one.
type BackupBegin struct {
	Cap  string `json:"cap"`
	Mode string `json:"mode,omitempty"`
}

// BackupBeginResult says what the run is. Reason says why an incremental run asked for is a full one.
type BackupBeginResult struct {
	Run       string   `json:"run"`
	Kind      string   `json:"kind"`
	Chain     []string `json:"chain"`
	Reason    string   `json:"reason,omitempty"`
	Recipient string   `json:"recipient"` // the node's own backup key, as an age recipient
}

// BackupPaths stores the files beneath the given folders (absolute paths, none beneath another) as the
// run's files. A run stores its files once.
type BackupPaths struct {
	Cap   string   `json:"cap"`
	Paths []string `json:"paths"`
}

// BackupPathsResult counts the tree and what the run stored of it.
type BackupPathsResult struct {
	Files       int64 `json:"files"`
	Bytes       int64 `json:"bytes"`
	Stored      int64 `json:"stored"`
	StoredBytes int64 `json:"stored_bytes"`
	Dirs        int64 `json:"dirs"`
	Symlinks    int64 `json:"symlinks"`
	Skipped     int64 `json:"skipped"`
	Vanished    int64 `json:"vanished"`
	Changed     int64 `json:"changed"`
	Segments    int   `json:"segments"`
}

// BackupDatabase dumps one PostgreSQL database (pg_dump, custom format) into the run.
type BackupDatabase struct {
	Cap      string `json:"cap"`
	Database string `json:"database"`
}

// BackupDatabaseResult is the dump's size.
type BackupDatabaseResult struct {
	Database string `json:"database"`
	Bytes    int64  `json:"bytes"`
	Segments int    `json:"segments"`
}

// BackupCommit writes the run's index and then its manifest: the run is a restore point once it
// answers.
type BackupCommit struct {
	Cap string `json:"cap"`
}

// BackupCommitResult describes the committed run, as its manifest does.
type BackupCommitResult struct {
	Run         string   `json:"run"`
	Kind        string   `json:"kind"`
	Chain       []string `json:"chain"`
	Manifest    string   `json:"manifest"` // the manifest's key
	Objects     int      `json:"objects"`
	Bytes       int64    `json:"bytes"` // every object, as stored
	Files       int64    `json:"files"`
	FileBytes   int64    `json:"file_bytes"`
	Stored      int64    `json:"stored"`
	StoredBytes int64    `json:"stored_bytes"`
	Databases   []string `json:"databases"`
	// Note says what went wrong after the run was committed (its index could not be kept on the node,
	// so the next run is a full one).
	Note string `json:"note,omitempty"`
}

// BackupVerify reads back the chain of runs the job's grant names, decrypting with the node's own key:
// every object against its manifest's size and digest, every file against its index's digest, and
// every database dump restored into a scratch database that is dropped afterwards.
type BackupVerify struct {
	Cap string `json:"cap"`
}

// BackupVerifyResult says what was checked.
type BackupVerifyResult struct {
	Run         string   `json:"run"`
	Chain       []string `json:"chain"`
	Files       int64    `json:"files"`
	Bytes       int64    `json:"bytes"`
	Objects     int      `json:"objects"`
	ObjectBytes int64    `json:"object_bytes"`
	Databases   []string `json:"databases"`
}

// BackupRestore restores the last run of the job's grant (its chain applied in order): either files
// into Into, an empty or new folder (with Path, the contents of that folder of the run; without, the
// whole tree under its full paths), or Database's dump into IntoDatabase (default Database), a
// database that must not exist yet. Nothing is changed unless all of it restores.
type BackupRestore struct {
	Cap          string `json:"cap"`
	Into         string `json:"into,omitempty"`
	Path         string `json:"path,omitempty"`
	Database     string `json:"database,omitempty"`
	IntoDatabase string `json:"into_database,omitempty"`
}

// BackupRestoreResult counts what was restored.
type BackupRestoreResult struct {
	Run          string `json:"run"`
	Files        int64  `json:"files,omitempty"`
	Bytes        int64  `json:"bytes,omitempty"`
	Dirs         int64  `json:"dirs,omitempty"`
	Symlinks     int64  `json:"symlinks,omitempty"`
	SetIDCleared int64  `json:"setid_cleared,omitempty"`
	Database     string `json:"database,omitempty"`
	IntoDatabase string `json:"into_database,omitempty"`
	DumpBytes    int64  `json:"dump_bytes,omitempty"`
}
