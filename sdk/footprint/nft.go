package footprint

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// TableFamily and TableName name the one nftables table Lexicon owns. Nothing else is touched: other
// tables keep their own chains, and since a packet must pass every base chain at its hook, Lexicon's
// table can only close what it does not open, never open what another table drops.
const (
	TableFamily = "inet"
	TableName   = "lexicon"
)

// RenderTable renders the firewall item as the nftables table Lexicon owns: its input chain refuses
// inbound traffic (a TCP reset, an ICMP administratively-prohibited) except replies to the machine's own connections, loopback, ICMP and ICMPv6 (path MTU
// discovery and IPv6 neighbour discovery need them), and what the rules open. A rule with sources is
// one line per address family, its sources as one set; one without opens the port from anywhere.
// Equal items render equal text.
func RenderTable(fw Firewall) string {
	var b strings.Builder
	b.WriteString("table " + TableFamily + " " + TableName + " {\n")
	b.WriteString("\tcomment \"managed by Lexicon: changes made here are undone by the next converge\"\n")
	b.WriteString("\tchain input {\n")
	b.WriteString("\t\ttype filter hook input priority filter; policy drop;\n")
	b.WriteString("\t\tct state established,related accept\n")
	b.WriteString("\t\tct state invalid drop\n")
	b.WriteString("\t\tiif \"lo\" accept\n")
	b.WriteString("\t\tmeta l4proto icmp accept\n")
	b.WriteString("\t\tmeta l4proto ipv6-icmp accept\n")
	for _, r := range fw.Inbound {
		port := strconv.Itoa(r.Port)
		if r.To != 0 {
			port += "-" + strconv.Itoa(r.To)
		}
		match := r.Protocol + " dport " + port + " accept\n"
		if len(r.Sources) == 0 {
			b.WriteString("\t\t" + match)
			continue
		}
		var v4, v6 []netip.Prefix
		for _, s := range r.Sources {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				continue // Validate refuses it; a footprint that was not validated renders without it
			}
			if p.Addr().Is4() {
				v4 = append(v4, p)
			} else {
				v6 = append(v6, p)
			}
		}
		for _, fam := range []struct {
			kw string
			ps []netip.Prefix
		}{{"ip", v4}, {"ip6", v6}} {
			if len(fam.ps) == 0 {
				continue
			}
			slices.SortFunc(fam.ps, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
			words := make([]string, len(fam.ps))
			for i, p := range fam.ps {
				words[i] = p.String()
			}
			set := words[0]
			if len(words) > 1 {
				set = "{ " + strings.Join(words, ", ") + " }"
			}
			b.WriteString("\t\t" + fam.kw + " saddr " + set + " " + match)
		}
	}
	// What no rule opens is refused out loud rather than dropped: a client, or a person testing the
	// port, learns at once that the firewall closed it instead of waiting for a timeout.
	b.WriteString("\t\tmeta l4proto tcp reject with tcp reset\n")
	b.WriteString("\t\treject with icmpx admin-prohibited\n")
	b.WriteString("\t}\n}\n")
	return b.String()
}

// ApplyScript is the nft -f script that replaces Lexicon's table with the item's in one transaction
// (or removes it, for an absent firewall): declaring the table first makes the delete succeed when
// there is none, and nft applies the whole script or none of it.
func ApplyScript(fw Firewall) string {
	head := "table " + TableFamily + " " + TableName + "\ndelete table " + TableFamily + " " + TableName + "\n"
	if fw.State == StateAbsent {
		return head
	}
	return head + RenderTable(fw)
}
