// Command cert_expiry is the recipe that wants every name the node serves (its own names, host or
// host:port, which the agent fills in from the node's policy) to present a certificate with at least
// min_days left. A failing verdict names each certificate: subject, issuer, serial, fingerprint and
// expiry, so the case says which one to renew.
package main

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type decl struct {
	Names   []string `json:"names"`
	MinDays int      `json:"min_days"`
}

func main() {
	word.Check(func(d decl) (word.Verdict, error) {
		if d.MinDays == 0 {
			d.MinDays = 14
		}
		if len(d.Names) == 0 {
			return word.Unknown("the node lists no names it serves"), nil
		}
		now := time.Now()
		var failing, unknown, fine []string
		for _, name := range d.Names {
			host, port, err := split(name)
			if err != nil {
				unknown = append(unknown, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			chain, err := word.TLS().Peer(host, port)
			if word.IsDenied(err) {
				return word.Verdict{}, err // the manifest and the policy disagree: not the machine's answer
			}
			if err != nil {
				unknown = append(unknown, fmt.Sprintf("%s: no certificate read (%s)", name, word.Code(err)))
				continue
			}
			if len(chain.Chain) == 0 {
				failing = append(failing, name+" serves no certificate")
				continue
			}
			leaf := chain.Chain[0]
			left := int(math.Floor(leaf.NotAfter.Sub(now).Hours() / 24))
			if left < d.MinDays {
				failing = append(failing, fmt.Sprintf("%s: certificate %s (issuer %s, serial %s, sha256 %s) expires %s, %d days left",
					name, leaf.Subject, leaf.Issuer, leaf.Serial, short(leaf.SHA256), leaf.NotAfter.UTC().Format(time.RFC3339), left))
				continue
			}
			fine = append(fine, fmt.Sprintf("%s %dd", name, left))
		}
		switch {
		case len(failing) > 0:
			return word.Failing("under %d days: %s", d.MinDays, strings.Join(failing, "; ")), nil
		case len(unknown) > 0:
			return word.Unknown("%s", strings.Join(unknown, "; ")), nil
		}
		return word.Pass("%d days or more: %s", d.MinDays, strings.Join(fine, ", ")), nil
	})
}

// split reads host or host:port (IPv6 in brackets); the port defaults to 443.
func split(name string) (string, int, error) {
	host, p, err := net.SplitHostPort(name)
	if err != nil {
		return strings.Trim(name, "[]"), 443, nil
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a port", p)
	}
	return host, port, nil
}

func short(sha string) string {
	if len(sha) > 16 {
		return sha[:16] + "…"
	}
	return sha
}
