package goplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/hashicorp/go-plugin"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// instance is one process of a driver.
type instance struct {
	client *plugin.Client
	base   driver.Base
	cloud  *cloud.Client // set for cloud drivers
	dns    *dns.Client   // set for DNS drivers
	pid    int
	exited chan struct{} // closed when the process has exited
	lost   bool          // the process died on its own; guarded by Driver.mu
	lostTo string        // errcode.DriverTimeout when ended for calls timing out in a row; guarded by Driver.mu
	// sockets is the folder the confined driver may write, its go-plugin socket in it; "" unconfined.
	sockets string
}

// kill ends the process (gracefully, then by force), waits for go-plugin to reap it, and removes its
// socket folder.
func (i *instance) kill() {
	i.client.Kill()
	removeSockets(i.sockets)
}

func removeSockets(dir string) {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

// socketDir makes the one folder a confined driver process may write: private to the driver's user.
func (d *Driver) socketDir() (string, error) {
	dir, err := os.MkdirTemp(d.opts.SocketsDir, "lexicon-driver-")
	if err != nil {
		return "", err
	}
	if c := d.conf.cred; c != nil {
		if err := os.Chown(dir, int(c.Uid), int(c.Gid)); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

// secureConfig returns go-plugin's checksum config for digest with a hasher of its own. SecureConfig
// feeds the file into Hash and never resets it, so a hasher shared between two starts carries the
// first file's bytes into the second sum and refuses a good binary: every start gets a new one.
func secureConfig(digest []byte) *plugin.SecureConfig {
	return &plugin.SecureConfig{Checksum: digest, Hash: sha256.New()}
}

// versionedPlugins is what the host offers go-plugin for kind.
func versionedPlugins(kind driver.Kind) map[int]plugin.PluginSet {
	if kind == driver.KindCloud {
		return cloud.VersionedPlugins(nil)
	}
	return dns.VersionedPlugins(nil)
}

// MaxDriverSize caps a driver executable read from the store.
const MaxDriverSize = 256 << 20

// errTooLarge is a blob over MaxDriverSize.
var errTooLarge = errors.New("driver executable over the size cap")

// launch starts one process of the driver from the store. The blob is copied as it is into a sealed
// memfd and hashed once, by SecureConfig, through that memfd: that is the one check that covers the
// bytes exec sees, so a re-hash by the store first would only double the cost of every start.
func (d *Driver) launch(ctx context.Context) (*instance, error) {
	if !cas.ValidDigest(d.spec.Digest) {
		return nil, errcode.New(errcode.ModuleNotFound, "%q is not a sha256 digest", d.spec.Digest)
	}
	f, err := os.Open(d.store.Path(d.spec.Digest))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errcode.Wrap(err, errcode.ModuleNotFound, "no driver %s in the store", d.spec.Digest).With(errcode.DetailSHA256, d.spec.Digest)
		}
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read driver %s", d.spec.Digest)
	}
	defer f.Close()
	return d.launchFrom(ctx, f)
}

// launchFrom starts one process from the executable r holds, which must hash to the spec's digest.
func (d *Driver) launchFrom(ctx context.Context, r io.Reader) (*instance, error) {
	sum, err := hex.DecodeString(d.spec.Digest)
	if err != nil || len(sum) != sha256.Size {
		return nil, errcode.New(errcode.ModuleNotFound, "%q is not a sha256 digest", d.spec.Digest)
	}
	name := "lexicon-driver-" + d.spec.Name
	exe, err := sealedExecutable(name, r, MaxDriverSize)
	if errors.Is(err, errTooLarge) {
		return nil, errcode.New(errcode.ModuleDigestMismatch, "driver %s is over %d bytes: it is not the pinned one", d.spec.Digest, MaxDriverSize).With(errcode.DetailSHA256, d.spec.Digest)
	}
	if err != nil {
		return nil, errcode.Wrap(err, errcode.DriverStartFailed, "cannot prepare driver %s: %v", d.spec.Name, err).With(errcode.DetailDigest, d.spec.Digest)
	}
	defer exe.Close() // once started, the process holds its own reference to the image

	// go-plugin's SecureConfig hashes the memfd with a fresh hasher before anything executes; the
	// trampoline (or exec, unconfined) then runs that same descriptor.
	if ok, err := secureConfig(sum).Check(fdPath(exe)); err != nil || !ok {
		if err == nil {
			err = plugin.ErrChecksumsDoNotMatch
		}
		return nil, d.startError(err)
	}
	cmd := exec.Command(fdPath(exe))
	cmd.Args = []string{name}
	cmd.Env = append([]string{}, d.opts.Env...)
	// The driver dies with the plane rather than linger with credentials in memory. (Pdeathsig follows
	// the thread that forked; Go keeps that thread alive unless it was locked, and a driver that dies
	// early is restarted anyway.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var sockets string
	if d.conf.confined() {
		sockets, err = d.socketDir()
		if err != nil {
			return nil, errcode.Wrap(err, errcode.DriverStartFailed, "cannot prepare driver %s's socket folder", d.spec.Name)
		}
		spec, _ := json.Marshal(confineSpec{Landlock: d.conf.landlockABI, Sockets: sockets})
		cmd.Path = "/proc/self/exe"
		cmd.ExtraFiles = []*os.File{exe}
		cmd.Env = append(cmd.Env, plugin.EnvUnixSocketDir+"="+sockets, confineEnv+"="+string(spec))
		cmd.SysProcAttr.Credential = d.conf.cred
	}

	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  driver.Handshake(),
		VersionedPlugins: versionedPlugins(d.spec.Kind),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		StartTimeout:     d.opts.StartTimeout,
		Logger:           newHCLog(d.log, &d.scrub, name),
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		removeSockets(sockets)
		return nil, d.startError(err)
	}
	inst := &instance{client: client, exited: make(chan struct{}), sockets: sockets}
	if cmd.Process != nil {
		inst.pid = cmd.Process.Pid
	}
	watchExit(inst.pid, inst.exited)
	raw, err := rpc.Dispense(string(d.spec.Kind))
	if err != nil {
		client.Kill()
		return nil, errcode.Wrap(err, errcode.DriverStartFailed, "driver %s does not serve the %s contract", d.spec.Name, d.spec.Kind)
	}
	switch c := raw.(type) {
	case *cloud.Client:
		inst.cloud, inst.base = c, c
	case *dns.Client:
		inst.dns, inst.base = c, c
	}
	info, err := inst.base.Info(ctx)
	if err != nil {
		client.Kill()
		return nil, errcode.Wrap(err, errcode.DriverStartFailed, "driver %s does not answer Info", d.spec.Name)
	}
	if info.Kind != d.spec.Kind {
		client.Kill()
		return nil, errcode.New(errcode.DriverStartFailed, "driver %s says it is a %s driver, the release says %s", d.spec.Name, info.Kind, d.spec.Kind)
	}
	d.log.Info("driver started", "pid", inst.pid, "driver_name", info.Name, "driver_version", info.Version)
	return inst, nil
}

// startError gives go-plugin's start failures their codes.
func (d *Driver) startError(err error) error {
	switch {
	case errors.Is(err, plugin.ErrChecksumsDoNotMatch):
		return errcode.Wrap(err, errcode.ModuleDigestMismatch, "driver %s does not hash to its pinned digest: refused before exec", d.spec.Name).With(errcode.DetailSHA256, d.spec.Digest)
	case strings.Contains(err.Error(), "incompatible API version"):
		return errcode.Wrap(err, errcode.DriverVersionMismatch, "driver %s shares no contract version with this host", d.spec.Name).With(errcode.DetailDigest, d.spec.Digest)
	}
	return errcode.Wrap(err, errcode.DriverStartFailed, "driver %s did not start", d.spec.Name).With(errcode.DetailDigest, d.spec.Digest)
}
