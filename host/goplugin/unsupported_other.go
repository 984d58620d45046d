//go:build !linux

package goplugin

import (
	"errors"
	"io"
	"os"
)

// Drivers run only on Linux: the executed bytes must be the verified bytes, which needs a sealed
// memfd, and crash detection needs a pidfd.

func sealedExecutable(string, io.Reader, int64) (*os.File, error) {
	return nil, errors.New("drivers run only on Linux (sealed memfd)")
}

func fdPath(*os.File) string { return "" }

func watchExit(int, chan<- struct{}) {}
