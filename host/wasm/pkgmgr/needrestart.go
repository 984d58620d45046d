package pkgmgr

import (
	"strconv"
	"strings"

	"github.com/lexicon-fleet/lexicon/host/wasm/systemd"
)

// Needrestart is what needrestart's batch mode (-b) says:
//
//	NEEDRESTART-VER: 3.6
//	NEEDRESTART-KCUR: 6.1.0-13-amd64
//	NEEDRESTART-KEXP: 6.1.0-18-amd64
//	NEEDRESTART-KSTA: 3
//	NEEDRESTART-SVC: nginx.service
//
// KSTA is the kernel's state: 0 unknown, 1 current, 2 an ABI-compatible upgrade pending, 3 a version
// upgrade pending.
type Needrestart struct {
	Version        string
	KernelCurrent  string
	KernelExpected string
	KernelStatus   int
	Services       []string
}

// ParseNeedrestart reads needrestart -b's NEEDRESTART-* lines; Perl's warnings and other lines it
// prints are skipped. A service is kept only when it is a unit name.
func ParseNeedrestart(out []byte) Needrestart {
	var n Needrestart
	sc := newScanner(out)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if !ok || !strings.HasPrefix(k, "NEEDRESTART-") {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimPrefix(k, "NEEDRESTART-") {
		case "VER":
			n.Version = v
		case "KCUR":
			n.KernelCurrent = v
		case "KEXP":
			n.KernelExpected = v
		case "KSTA":
			n.KernelStatus, _ = strconv.Atoi(v)
		case "SVC":
			// needrestart names a System V service without a suffix; systemd knows it as NAME.service.
			if !strings.Contains(v, ".") {
				v += ".service"
			}
			if systemd.ValidName(v) {
				n.Services = append(n.Services, v)
			}
		}
	}
	return n
}
