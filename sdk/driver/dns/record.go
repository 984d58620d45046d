package dns

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Limits every driver enforces the same way.
const (
	// MaxTXTLen caps a TXT value (Cloudflare's limit; DKIM keys fit).
	MaxTXTLen = 2048
	// MaxTTL caps a TTL (RFC 2181's 2^31-1 seconds, rounded down to a week that is still plenty).
	MaxTTL = 7 * 24 * time.Hour
	// MaxRecords caps the records of one call.
	MaxRecords = 1000
)

// supported lists the record types of this contract version.
var supported = map[string]bool{"A": true, "AAAA": true, "CNAME": true, "MX": true, "NS": true, "PTR": true, "SRV": true, "TXT": true, "CAA": true}

var (
	labelRE = regexp.MustCompile(`^(\*|[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)$`)
	typeRE  = regexp.MustCompile(`^[A-Z][A-Z0-9]{0,9}$`)
	caaRE   = regexp.MustCompile(`^([0-9]{1,3}) ([a-z0-9]{1,15}) "([^"\\]*)"$`)
)

func invalid(field, format string, args ...any) error {
	return errcode.New(errcode.DNSInvalid, "%s: "+format, append([]any{field}, args...)...).With(errcode.DetailField, field)
}

// NotFound is the dns.not_found error for a zone.
func NotFound(zone string) error {
	return errcode.New(errcode.DNSNotFound, "zone %q is not served by this account", zone).With(errcode.DetailZone, zone)
}

// NormalizeZone returns a zone name in canonical form (lower case, trailing dot) or dns.invalid.
func NormalizeZone(zone string) (string, error) {
	z := strings.ToLower(strings.TrimSuffix(zone, "."))
	if z == "" || len(z) > 253 {
		return "", invalid("zone", "zone %q is not a domain name", zone)
	}
	for _, l := range strings.Split(z, ".") {
		if l == "*" || !labelRE.MatchString(l) {
			return "", invalid("zone", "zone %q is not a domain name", zone)
		}
	}
	return z + ".", nil
}

// Normalize returns r in canonical form, or dns.invalid naming the field (dns.unsupported for a
// well-formed type this contract does not carry). Every driver normalizes its input with it, so bad
// input is refused the same way everywhere and before anything reaches the provider.
func (r Record) Normalize() (Record, error) {
	out := r
	out.Type = strings.ToUpper(strings.TrimSpace(r.Type))
	if !typeRE.MatchString(out.Type) {
		return Record{}, invalid("type", "%q is not a record type", r.Type)
	}
	if !supported[out.Type] {
		return Record{}, errcode.New(errcode.DNSUnsupported, "record type %s is not supported", out.Type).With(errcode.DetailField, "type")
	}
	name, err := normalizeName(r.Name)
	if err != nil {
		return Record{}, err
	}
	out.Name = name
	if r.TTL < 0 || r.TTL > MaxTTL || r.TTL%time.Second != 0 {
		return Record{}, invalid("ttl", "TTL %s must be whole seconds from 0 to %s", r.TTL, MaxTTL)
	}
	if r.Priority != 0 && out.Type != "MX" && out.Type != "SRV" {
		return Record{}, invalid("priority", "only MX and SRV records have a priority")
	}
	v, err := normalizeValue(out.Type, r.Value)
	if err != nil {
		return Record{}, err
	}
	out.Value = v
	return out, nil
}

func normalizeName(name string) (string, error) {
	n := strings.ToLower(name)
	if n == "@" || n == "" {
		return "@", nil
	}
	if strings.HasSuffix(n, ".") || len(n) > 253 {
		return "", invalid("name", "name %q must be relative to the zone (\"@\" for the apex)", name)
	}
	for i, l := range strings.Split(n, ".") {
		if !labelRE.MatchString(l) || (l == "*" && i != 0) {
			return "", invalid("name", "name %q is not a DNS name", name)
		}
	}
	return n, nil
}

// target normalizes a host name in a value: lower case, absolute.
func target(field, v string) (string, error) {
	t := strings.ToLower(strings.TrimSuffix(v, "."))
	if t == "" || len(t) > 253 {
		return "", invalid(field, "%q is not a host name", v)
	}
	for _, l := range strings.Split(t, ".") {
		if l == "*" || !labelRE.MatchString(l) {
			return "", invalid(field, "%q is not a host name", v)
		}
	}
	return t + ".", nil
}

func normalizeValue(typ, v string) (string, error) {
	switch typ {
	case "A":
		a, err := netip.ParseAddr(v)
		if err != nil || !a.Is4() {
			return "", invalid("value", "%q is not an IPv4 address", v)
		}
		return a.String(), nil
	case "AAAA":
		a, err := netip.ParseAddr(v)
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return "", invalid("value", "%q is not an IPv6 address", v)
		}
		return a.String(), nil
	case "CNAME", "NS", "PTR", "MX":
		return target("value", v)
	case "SRV":
		f := strings.Fields(v)
		if len(f) != 3 {
			return "", invalid("value", "SRV value %q must be \"weight port target\"", v)
		}
		w, err1 := strconv.ParseUint(f[0], 10, 16)
		p, err2 := strconv.ParseUint(f[1], 10, 16)
		if err1 != nil || err2 != nil {
			return "", invalid("value", "SRV weight and port must be 0 to 65535 in %q", v)
		}
		t := "."
		if f[2] != "." {
			var err error
			if t, err = target("value", f[2]); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("%d %d %s", w, p, t), nil
	case "TXT":
		if v == "" || len(v) > MaxTXTLen {
			return "", invalid("value", "TXT value must be 1 to %d bytes", MaxTXTLen)
		}
		if !utf8.ValidString(v) {
			return "", invalid("value", "TXT value is not UTF-8")
		}
		for _, c := range v {
			if c < 0x20 || c == 0x7f {
				return "", invalid("value", "TXT value holds a control character")
			}
		}
		return v, nil
	case "CAA":
		m := caaRE.FindStringSubmatch(v)
		if m == nil {
			return "", invalid("value", "CAA value %q must be `flags tag \"value\"`", v)
		}
		if n, _ := strconv.Atoi(m[1]); n > 255 {
			return "", invalid("value", "CAA flags must be 0 to 255")
		}
		return v, nil
	}
	return "", errcode.New(errcode.DNSUnsupported, "record type %s is not supported", typ).With(errcode.DetailField, "type")
}

// NormalizeAll normalizes each record, naming the index of the first bad one in details.index, and
// refuses more than MaxRecords.
func NormalizeAll(recs []Record) ([]Record, error) {
	if len(recs) > MaxRecords {
		return nil, invalid("records", "at most %d records per call", MaxRecords)
	}
	out := make([]Record, 0, len(recs))
	for i, r := range recs {
		n, err := r.Normalize()
		if err != nil {
			if e, ok := err.(*errcode.Error); ok {
				e.With(errcode.DetailIndex, i)
			}
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// Same reports whether a and b are the same record (name, type, value and priority; not TTL or ID),
// both in canonical form.
func Same(a, b Record) bool {
	return a.Name == b.Name && a.Type == b.Type && a.Value == b.Value && a.Priority == b.Priority
}

// Matches reports whether zone record r is one that the delete pattern p names: same name, and same
// type and value where p gives them.
func Matches(p, r Record) bool {
	return p.Name == r.Name && (p.Type == "" || p.Type == r.Type) && (p.Value == "" || p.Value == r.Value)
}

// NormalizePattern normalizes a DeleteRecords pattern, where type and value may be empty.
func NormalizePattern(p Record) (Record, error) {
	if p.Type == "" {
		name, err := normalizeName(p.Name)
		if err != nil {
			return Record{}, err
		}
		return Record{Name: name}, nil
	}
	if p.Value == "" {
		probe := p
		probe.Value = placeholder(strings.ToUpper(p.Type))
		n, err := probe.Normalize()
		if err != nil {
			return Record{}, err
		}
		n.Value, n.TTL, n.Priority = "", 0, 0
		return n, nil
	}
	p.TTL = 0
	return p.Normalize()
}

// placeholder is a valid value of typ, used to check a pattern's name and type alone.
func placeholder(typ string) string {
	switch typ {
	case "A":
		return "192.0.2.1"
	case "AAAA":
		return "2001:db8::1"
	case "SRV":
		return "0 0 ."
	case "CAA":
		return `0 issue ";"`
	}
	return "x"
}

// Absolute returns the fully qualified form of a relative name in zone ("www", "example.com." →
// "www.example.com."; "@" → "example.com.").
func Absolute(name, zone string) string {
	if name == "@" || name == "" {
		return zone
	}
	return name + "." + zone
}

// Relative returns fqdn relative to zone ("@" for the apex), both canonical. ok is false when fqdn is
// not in zone.
func Relative(fqdn, zone string) (name string, ok bool) {
	fqdn = strings.ToLower(fqdn)
	if !strings.HasSuffix(fqdn, ".") {
		fqdn += "."
	}
	if fqdn == zone {
		return "@", true
	}
	if strings.HasSuffix(fqdn, "."+zone) {
		return strings.TrimSuffix(fqdn, "."+zone), true
	}
	return "", false
}
