package caps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// PostgreSQL's client programs run from the folder the node's policy names. They are Debian's, updated
// with the system, so they are not pinned by digest as exec.pinned's programs are; instead the folder is
// reached from "/" without a symlink, it and every folder above it must be one only root (or the
// agent's user) can change, and the program must be a regular file owned by one of them and writable by
// no one else: only someone who could replace the agent itself could replace what runs. The program is
// run from the descriptor checked (/proc/self/fd/3), never looked up by path again. Arguments are fixed
// here; the database name is a plain name (backup.ValidDatabaseName), which pg_dump cannot read as
// connection settings. The environment is PATH, LANG and a connection timeout; a password, if any,
// comes from the agent user's ~/.pgpass as libpq finds it.

// pgProgram opens the policy's program name for running.
func pgProgram(pg *backup.Postgres, name string) (*os.File, error) {
	const cap = "backup"
	dirfd, err := openRoot(cap, pg.Bin, true)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	if err := safeAncestor(cap, pg.Bin, pg.Bin, dirfd); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fsError(cap, pg.Bin+"/"+name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fsError(cap, pg.Bin+"/"+name, err)
	}
	path := pg.Bin + "/" + name
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		unix.Close(fd)
		return nil, errcode.New(errcode.BackupDumpFailed, "%s is not a regular file", path).With(errcode.DetailPath, path)
	case st.Uid != 0 && int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0:
		unix.Close(fd)
		return nil, errcode.New(errcode.CapabilityRootUnsafe, "%s could be replaced by someone other than root: it is owned by uid %d with mode %04o",
			path, st.Uid, st.Mode&0o7777).With(errcode.DetailPath, path).With(errcode.DetailFolder, pg.Bin)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// pgCmd prepares program name with the policy's connection and args. The caller starts and waits
// for it, and closes the program file after.
func pgCmd(ctx context.Context, pg *backup.Postgres, name string, args ...string) (*exec.Cmd, *os.File, *capped, error) {
	prog, err := pgProgram(pg, name)
	if err != nil {
		return nil, nil, nil, err
	}
	conn := []string{"--no-password"}
	if pg.Host != "" {
		conn = append(conn, "--host="+pg.Host)
	}
	if pg.Port != 0 {
		conn = append(conn, "--port="+strconv.Itoa(pg.Port))
	}
	if pg.User != "" {
		conn = append(conn, "--username="+pg.User)
	}
	cmd := exec.CommandContext(ctx, "/proc/self/fd/3", append(conn, args...)...)
	cmd.Args[0] = prog.Name()
	cmd.ExtraFiles = []*os.File{prog}
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", "PGCONNECT_TIMEOUT=10"}
	if home, err := os.UserHomeDir(); err == nil {
		cmd.Env = append(cmd.Env, "HOME="+home) // where libpq looks for ~/.pgpass
	}
	cmd.Dir = "/"
	stderr := &capped{n: 64 << 10}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd, prog, stderr, nil
}

// pgFailed is how a PostgreSQL program's failure reads: its exit status and the end of what it said.
func pgFailed(ctx context.Context, name string, err error, stderr *capped, database string) error {
	if ctx.Err() != nil {
		return errcode.Wrap(ctx.Err(), errcode.CapabilityTimeout, "%s was stopped before it finished", name)
	}
	said := strings.TrimSpace(stderr.b.String())
	if len(said) > 512 {
		said = "…" + said[len(said)-512:]
	}
	var exit *exec.ExitError
	code := -1
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	}
	if database != "" && strings.Contains(said, fmt.Sprintf("database %q does not exist", database)) {
		return errcode.New(errcode.BackupDatabaseMissing, "the database %s does not exist", database).With(errcode.DetailName, database)
	}
	if database != "" && strings.Contains(said, fmt.Sprintf("database %q already exists", database)) {
		return errcode.New(errcode.BackupRestoreTargetNotEmpty, "the database %s exists: a restore goes only into a database that does not exist yet", database).
			With(errcode.DetailName, database)
	}
	return errcode.New(errcode.BackupDumpFailed, "%s exited %d: %s", name, code, said).With(errcode.DetailExitCode, code).With(errcode.DetailName, name)
}

// pgDump runs pg_dump of database in the custom format and hands its output to consume. A dump that
// ends with an error fails even if consume took all it wrote.
func pgDump(ctx context.Context, pg *backup.Postgres, database string, consume func(*os.File) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd, prog, stderr, err := pgCmd(ctx, pg, "pg_dump", "--format=custom", "--dbname="+database)
	if err != nil {
		return err
	}
	defer prog.Close()
	out, w, err := os.Pipe()
	if err != nil {
		return errcode.Wrap(err, errcode.CapabilityFailed, "cannot run pg_dump")
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		out.Close()
		w.Close()
		return errcode.Wrap(err, errcode.BackupDumpFailed, "cannot start pg_dump")
	}
	w.Close()
	cerr := consume(out)
	if cerr != nil {
		cancel() // pg_dump would wait forever on a pipe nobody reads
	}
	out.Close()
	werr := cmd.Wait()
	if werr != nil && cerr == nil {
		return pgFailed(ctx, "pg_dump", werr, stderr, database)
	}
	return cerr
}

// pgRun runs a PostgreSQL program to its end, with stdin (may be nil), and returns what it printed
// (at most 64 KiB).
func pgRun(ctx context.Context, pg *backup.Postgres, database string, stdin io.Reader, name string, args ...string) ([]byte, error) {
	cmd, prog, stderr, err := pgCmd(ctx, pg, name, args...)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	cmd.Stdin = stdin
	stdout := &capped{n: 64 << 10}
	cmd.Stdout = stdout
	if err := cmd.Run(); err != nil {
		return nil, pgFailed(ctx, name, err, stderr, database)
	}
	return stdout.b.Bytes(), nil
}

// pgScript runs SQL through psql in the maintenance database, with the database names it is given as
// psql variables (:"name" quotes one as an identifier), stopping at the first error.
func pgScript(ctx context.Context, pg *backup.Postgres, sql string, vars ...string) ([]byte, error) {
	args := []string{"-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "--dbname=postgres"}
	for _, v := range vars {
		args = append(args, "-v", v)
	}
	return pgRun(ctx, pg, "", strings.NewReader(sql), "psql", append(args, "-f", "-")...)
}

// pgDrop drops database if it exists, on a context of its own: the caller's may be what ended.
func pgDrop(ctx context.Context, pg *backup.Postgres, database string) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	_, err := pgRun(dctx, pg, "", nil, "dropdb", "--if-exists", "--", database)
	return err
}

// pgRestoreInto restores dump into scratch, made afresh (one left by a killed run is dropped first),
// in one transaction; a failed restore drops it again.
func pgRestoreInto(ctx context.Context, pg *backup.Postgres, scratch string, dump io.Reader) error {
	if err := pgDrop(ctx, pg, scratch); err != nil {
		return err
	}
	if _, err := pgRun(ctx, pg, scratch, nil, "createdb", "--", scratch); err != nil {
		return err
	}
	_, err := pgRun(ctx, pg, "", dump, "pg_restore", "--exit-on-error", "--single-transaction", "--dbname="+scratch)
	if err != nil {
		if derr := pgDrop(ctx, pg, scratch); derr != nil {
			return errcode.Wrap(err, errcode.Code(err), "%s; and the half-restored database %s could not be dropped: %s",
				errcode.From(err, "").Message, scratch, errcode.From(derr, "").Message)
		}
	}
	return err
}

// pgRestoreNew restores dump into database, which must not exist. The dump is restored into a scratch
// database and renamed to database only once all of it is in: a restore that fails, or is killed,
// never leaves a database of that name behind.
func pgRestoreNew(ctx context.Context, pg *backup.Postgres, node, database string, dump io.Reader) error {
	out, err := pgScript(ctx, pg, "SELECT count(*) FROM pg_database WHERE datname = :'target';", "target="+database)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(out)) != "0" {
		return errcode.New(errcode.BackupRestoreTargetNotEmpty, "the database %s exists: a restore goes only into a database that does not exist yet", database).
			With(errcode.DetailName, database)
	}
	scratch := backup.ScratchDatabase("restore", node, database)
	if err := pgRestoreInto(ctx, pg, scratch, dump); err != nil {
		return err
	}
	if _, err := pgScript(ctx, pg, `ALTER DATABASE :"scratch" RENAME TO :"target";`, "scratch="+scratch, "target="+database); err != nil {
		_ = pgDrop(ctx, pg, scratch)
		e := errcode.From(err, errcode.BackupDumpFailed)
		if strings.Contains(e.Message, "already exists") {
			return errcode.New(errcode.BackupRestoreTargetNotEmpty, "the database %s appeared while it was restored; nothing was changed", database).
				With(errcode.DetailName, database)
		}
		return err
	}
	return nil
}

// pgVerify restores dump into a scratch database and drops it again.
func pgVerify(ctx context.Context, pg *backup.Postgres, node, database string, dump io.Reader) error {
	scratch := backup.ScratchDatabase("verify", node, database)
	if err := pgRestoreInto(ctx, pg, scratch, dump); err != nil {
		return err
	}
	return pgDrop(ctx, pg, scratch)
}
