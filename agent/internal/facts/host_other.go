//go:build !linux

package facts

import (
	"os"
	"runtime"
)

// thisHost knows less off Linux (the agent runs on Linux; this keeps the tree building elsewhere).
func thisHost() Host {
	name, _ := os.Hostname()
	return Host{Arch: runtime.GOARCH, Hostname: name, Addresses: addresses()}
}
