package main

import (
	"fmt"
	"net"
	"strings"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
)

// fromRR turns a resource record of zone into a canonical record; ok is false for what the contract
// does not carry (SOA, DNSSEC records, types outside the contract).
func fromRR(rr mdns.RR, zone string) (dns.Record, bool) {
	h := rr.Header()
	name, ok := dns.Relative(h.Name, zone)
	if !ok {
		return dns.Record{}, false
	}
	rec := dns.Record{Name: name, TTL: time.Duration(h.Ttl) * time.Second}
	switch v := rr.(type) {
	case *mdns.A:
		rec.Type, rec.Value = "A", v.A.String()
	case *mdns.AAAA:
		rec.Type, rec.Value = "AAAA", v.AAAA.String()
	case *mdns.CNAME:
		rec.Type, rec.Value = "CNAME", v.Target
	case *mdns.NS:
		rec.Type, rec.Value = "NS", v.Ns
	case *mdns.PTR:
		rec.Type, rec.Value = "PTR", v.Ptr
	case *mdns.MX:
		rec.Type, rec.Value, rec.Priority = "MX", v.Mx, v.Preference
	case *mdns.SRV:
		rec.Type, rec.Value, rec.Priority = "SRV", fmt.Sprintf("%d %d %s", v.Weight, v.Port, v.Target), v.Priority
	case *mdns.TXT:
		// miekg keeps each character-string in escaped presentation form.
		var parts []string
		for _, s := range v.Txt {
			p, err := dns.UnquoteTXT(`"` + s + `"`)
			if err != nil {
				return dns.Record{}, false
			}
			parts = append(parts, p)
		}
		rec.Type, rec.Value = "TXT", dns.JoinTXT(parts)
	case *mdns.CAA:
		rec.Type, rec.Value = "CAA", fmt.Sprintf("%d %s %q", v.Flag, v.Tag, v.Value)
	default:
		return dns.Record{}, false
	}
	n, err := rec.Normalize()
	if err != nil {
		return dns.Record{}, false
	}
	return n, true
}

// escapeTXT writes a character-string in the escaped form miekg packs.
func escapeTXT(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// toRRs turns canonical records of zone into resource records.
func toRRs(recs []dns.Record, zone string) []mdns.RR {
	out := make([]mdns.RR, 0, len(recs))
	for _, r := range recs {
		if rr := toRR(r, zone); rr != nil {
			out = append(out, rr)
		}
	}
	return out
}

// toRR turns one canonical (already normalized) record into a resource record.
func toRR(r dns.Record, zone string) mdns.RR {
	h := mdns.RR_Header{Name: dns.Absolute(r.Name, zone), Rrtype: mdns.StringToType[r.Type], Class: mdns.ClassINET, Ttl: uint32(r.TTL / time.Second)}
	switch r.Type {
	case "A":
		return &mdns.A{Hdr: h, A: net.ParseIP(r.Value).To4()}
	case "AAAA":
		return &mdns.AAAA{Hdr: h, AAAA: net.ParseIP(r.Value)}
	case "CNAME":
		return &mdns.CNAME{Hdr: h, Target: r.Value}
	case "NS":
		return &mdns.NS{Hdr: h, Ns: r.Value}
	case "PTR":
		return &mdns.PTR{Hdr: h, Ptr: r.Value}
	case "MX":
		return &mdns.MX{Hdr: h, Preference: r.Priority, Mx: r.Value}
	case "SRV":
		var w, p uint16
		var target string
		fmt.Sscanf(r.Value, "%d %d %s", &w, &p, &target)
		return &mdns.SRV{Hdr: h, Priority: r.Priority, Weight: w, Port: p, Target: target}
	case "TXT":
		var parts []string
		for _, p := range dns.SplitTXT(r.Value) {
			parts = append(parts, escapeTXT(p))
		}
		return &mdns.TXT{Hdr: h, Txt: parts}
	case "CAA":
		var flag uint8
		var tag, quoted string
		fmt.Sscanf(r.Value, "%d %s", &flag, &tag)
		quoted = r.Value[strings.Index(r.Value, `"`):]
		return &mdns.CAA{Hdr: h, Flag: flag, Tag: tag, Value: strings.Trim(quoted, `"`)}
	}
	return nil
}
