//go:build !linux

package goplugin

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// Drivers run only on Linux: the executed bytes must be the verified bytes, which needs a sealed
// memfd, and crash detection needs a pidfd.

func sealedExecutable(string, io.Reader, int64) (*os.File, error) {
	return nil, errors.New("drivers run only on Linux (sealed memfd)")
}

func fdPath(*os.File) string { return "" }

func watchExit(int, chan<- struct{}) {}

// Confinement is Linux-only too; these keep the package building elsewhere.

const (
	confineEnv        = "LEXICON_DRIVER_CONFINE"
	ProtectUser       = "user"
	ProtectLandlock   = "landlock"
	ProtectNoNewPrivs = "no_new_privs"
	ProtectUnconfined = "unconfined"
)

type confineSpec struct {
	Landlock int    `json:"landlock"`
	Sockets  string `json:"sockets"`
}

type confinement struct {
	cred        *syscall.Credential
	landlockABI int
}

func (confinement) protections() []string { return []string{ProtectUnconfined} }
func (confinement) confined() bool        { return false }

func decideConfinement(string, bool) confinement { return confinement{} }
