// Command cert_expiry is the word that reads the certificate a node serves for one of its own names:
// days left, issuer, names covered, whether it is self-signed, and whether it covers the name asked.
package main

import (
	"math"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type params struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	WarnDays int    `json:"warn_days"`
}

type output struct {
	Host        string    `json:"host"`
	Port        int       `json:"port"`
	Status      string    `json:"status"` // ok, expiring, expired, not_yet_valid
	DaysLeft    int       `json:"days_left"`
	NotBefore   time.Time `json:"not_before"`
	NotAfter    time.Time `json:"not_after"`
	Subject     string    `json:"subject"`
	Issuer      string    `json:"issuer"`
	Names       []string  `json:"names"`
	CoversHost  bool      `json:"covers_host"`
	SelfSigned  bool      `json:"self_signed"`
	ChainLength int       `json:"chain_length"`
	TLSVersion  string    `json:"tls_version"`
}

func main() {
	word.Run(func(p params) (output, error) {
		port, warn := p.Port, p.WarnDays
		if port == 0 {
			port = 443
		}
		if warn == 0 {
			warn = 14
		}
		chain, err := word.TLS().Peer(p.Host, port)
		if err != nil {
			return output{}, err
		}
		if len(chain.Chain) == 0 {
			return output{}, word.Fail("cert_expiry.no_certificate", "%s:%d served no certificate", p.Host, port)
		}
		leaf := chain.Chain[0]
		now := time.Now()
		left := leaf.NotAfter.Sub(now)
		out := output{
			Host: p.Host, Port: port, NotBefore: leaf.NotBefore, NotAfter: leaf.NotAfter,
			DaysLeft: int(math.Floor(left.Hours() / 24)), Subject: leaf.Subject, Issuer: leaf.Issuer,
			Names: append(append([]string{}, leaf.DNSNames...), leaf.IPAddresses...), SelfSigned: leaf.SelfSigned,
			ChainLength: len(chain.Chain), TLSVersion: chain.Version, CoversHost: covers(leaf, p.Host),
		}
		switch {
		case now.Before(leaf.NotBefore):
			out.Status = "not_yet_valid"
		case left <= 0:
			out.Status = "expired"
		case left < time.Duration(warn)*24*time.Hour:
			out.Status = "expiring"
		default:
			out.Status = "ok"
		}
		return out, nil
	})
}

// covers reports whether the certificate names host, with one-label wildcards as TLS clients allow.
func covers(c word.Certificate, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, ip := range c.IPAddresses {
		if ip == host {
			return true
		}
	}
	for _, n := range c.DNSNames {
		n = strings.ToLower(n)
		if n == host {
			return true
		}
		if rest, ok := strings.CutPrefix(n, "*."); ok {
			if _, tail, found := strings.Cut(host, "."); found && tail == rest {
				return true
			}
		}
	}
	return false
}
