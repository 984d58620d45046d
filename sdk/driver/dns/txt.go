package dns

import (
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// A TXT record's data is a sequence of character-strings of at most 255 bytes each (RFC 1035 3.3.14);
// a longer value (SPF, DKIM) is split across several, and readers join them with nothing in between
// (RFC 7208 3.3). These helpers do the split, the join and the presentation-format quoting some
// providers use in their APIs.

// MaxTXTString is the longest character-string.
const MaxTXTString = 255

// SplitTXT splits a TXT value into character-strings of at most MaxTXTString bytes, never inside a
// UTF-8 sequence.
func SplitTXT(value string) []string {
	var out []string
	for len(value) > MaxTXTString {
		cut := MaxTXTString
		for cut > 0 && value[cut]&0xC0 == 0x80 { // do not split a multi-byte character
			cut--
		}
		out = append(out, value[:cut])
		value = value[cut:]
	}
	return append(out, value)
}

// JoinTXT joins character-strings back into the value.
func JoinTXT(parts []string) string { return strings.Join(parts, "") }

// QuoteTXT returns the presentation form of a TXT value: each character-string in double quotes,
// with " and \ escaped, separated by spaces (`"v=spf1 " "-all"`).
func QuoteTXT(value string) string {
	parts := SplitTXT(value)
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		for j := 0; j < len(p); j++ {
			if p[j] == '"' || p[j] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(p[j])
		}
		b.WriteByte('"')
	}
	return b.String()
}

// UnquoteTXT reads the presentation form back into the value. Text that does not start with a double
// quote is taken as the value itself (providers that store TXT content unquoted). A quote left open or
// text between the quoted strings is dns.invalid.
func UnquoteTXT(s string) (string, error) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, `"`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(t); {
		switch t[i] {
		case ' ', '\t':
			i++
			continue
		case '"':
		default:
			return "", errcode.New(errcode.DNSInvalid, "TXT data %.40q has text outside quotes", s)
		}
		i++ // opening quote
		closed := false
		for i < len(t) {
			c := t[i]
			if c == '\\' && i+1 < len(t) {
				if i+3 < len(t) && isDigit(t[i+1]) && isDigit(t[i+2]) && isDigit(t[i+3]) {
					// \DDD decimal escape
					n := int(t[i+1]-'0')*100 + int(t[i+2]-'0')*10 + int(t[i+3]-'0')
					if n > 255 {
						return "", errcode.New(errcode.DNSInvalid, "TXT data %.40q has a bad escape", s)
					}
					b.WriteByte(byte(n))
					i += 4
					continue
				}
				b.WriteByte(t[i+1])
				i += 2
				continue
			}
			if c == '"' {
				closed = true
				i++
				break
			}
			b.WriteByte(c)
			i++
		}
		if !closed {
			return "", errcode.New(errcode.DNSInvalid, "TXT data %.40q leaves a quote open", s)
		}
	}
	return b.String(), nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
