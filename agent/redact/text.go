package redact

import (
	"net/netip"
	"strings"
)

const (
	credentialMarker = "[redacted:credential]"
	ipMarker         = "[redacted:ip]"
	// elision replaces an e-mail local part and a URL's userinfo.
	elision = "…"
)

// textOpts carries what the JSON walk knows about a string from its key.
type textOpts struct {
	digest bool // the key promises a digest: leave hex and base64 runs alone
}

// maxRounds bounds redactText's rounds. Each round that changes anything replaces text with markers
// no rule matches, so rounds cannot go on forever; fuzzing has never needed more than three.
const maxRounds = 8

// redactText runs the rules in order, and runs them again while a round changes anything: a rule can
// change what another sees (a token redacted after "10.0.0.1." leaves an address that the IP rule,
// which ran first, had read as part of a longer dotted number). The result is a fixed point of a
// round, which is what makes redaction idempotent.
func redactText(s string, o textOpts, c Counts) string {
	for range maxRounds {
		next := redactRound(s, o, c)
		if next == s {
			break
		}
		s = next
	}
	return s
}

// redactRound runs each rule once. Each rule leaves a marker where it redacted, and no rule matches
// a marker.
func redactRound(s string, o textOpts, c Counts) string {
	s = redactPEM(s, c)
	s = redactUserinfo(s, c)
	s = redactKeyValues(s, c)
	s = redactEmails(s, c)
	s = redactIPs(s, c)
	if !o.digest {
		s = redactTokens(s, c)
	}
	return s
}

var pemRe = lazyRegexp(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`)

// redactPEM replaces a PEM private key block whole (to the end of the text if it is cut short).
func redactPEM(s string, c Counts) string {
	if !strings.Contains(s, "PRIVATE KEY-----") {
		return s
	}
	return pemRe().ReplaceAllStringFunc(s, func(string) string {
		c[Credential]++
		return credentialMarker
	})
}

// userinfoRe finds scheme://userinfo@ (RFC 3986: userinfo holds no '/', '?', '#', '@', '[' or ']').
var userinfoRe = lazyRegexp(`\b([A-Za-z][A-Za-z0-9+.-]*://)([^/?#@\s\[\]"'<>]+)@`)

func redactUserinfo(s string, c Counts) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return userinfoRe().ReplaceAllStringFunc(s, func(m string) string {
		sub := userinfoRe().FindStringSubmatch(m)
		if sub[2] == elision {
			return m
		}
		c[Userinfo]++
		return sub[1] + elision + "@"
	})
}

// maxKeyLen bounds how far back from a ':' or '=' a key is looked for.
const maxKeyLen = 64

// redactKeyValues replaces the value of credential-named key=value and key: value pairs in free text
// (DB_PASSWORD=..., "token": "...", Authorization: Bearer ..., ?access_token=...). A key is a run of
// letters, digits and _.- starting with a letter or '_', optionally closed by a quote, then optional
// blanks, then ':', ':=' or '='. A quoted value runs to its closing quote; a line key's (Authorization,
// Cookie) to the end of the line; any other to the next space, quote, or one of , ; & < > ( ) { }.
func redactKeyValues(s string, c Counts) string {
	if !strings.ContainsAny(s, ":=") {
		return s
	}
	var b strings.Builder
	last := 0
	for p := 0; p < len(s); p++ {
		if s[p] != ':' && s[p] != '=' {
			continue
		}
		sepEnd := p + 1
		if s[p] == ':' && sepEnd < len(s) && s[sepEnd] == '=' {
			sepEnd++
		}
		// Walk back over blanks, an optional closing quote, and the key.
		k := p
		for k > last && (s[k-1] == ' ' || s[k-1] == '\t') {
			k--
		}
		closeQuote := k > last && (s[k-1] == '"' || s[k-1] == '\'')
		if closeQuote {
			k--
		}
		keyEnd := k
		for k > last && keyEnd-k < maxKeyLen && (isAlnum(s[k-1]) || s[k-1] == '_' || s[k-1] == '.' || s[k-1] == '-') {
			k--
		}
		// The key starts at its first letter or '_' (a leading "--" or "." is not part of it).
		for k < keyEnd && !isAlpha(s[k]) && s[k] != '_' {
			k++
		}
		if k == keyEnd {
			continue
		}
		key := s[k:keyEnd]
		if !isCredentialKey(key) {
			p = sepEnd - 1
			continue
		}
		i := sepEnd
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) || s[i] == '=' || s[i] == '\n' || s[i] == '\r' {
			p = sepEnd - 1
			continue // no value, or a comparison (token == x)
		}
		// A header written inside quotes (curl -H 'Authorization: Bearer x') ends at the closing quote.
		var quote byte
		if k > 0 && (s[k-1] == '"' || s[k-1] == '\'') && !closeQuote {
			quote = s[k-1]
		}
		start, end := valueSpan(s, i, isLineKey(key), quote)
		p = max(end, sepEnd) - 1
		if v := s[start:end]; v == "" || v == credentialMarker {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(credentialMarker)
		last = end
		c[Credential]++
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// valueSpan returns the value starting at s[i]. A line value stops at the end of the line or at quote
// (when not 0).
func valueSpan(s string, i int, line bool, quote byte) (int, int) {
	if q := s[i]; q == '"' || q == '\'' {
		end := i + 1
		for end < len(s) && s[end] != q && s[end] != '\n' {
			if s[end] == '\\' && end+1 < len(s) && s[end+1] != '\n' {
				end++
			}
			end++
		}
		return i + 1, min(end, len(s))
	}
	end := i
	if line {
		for end < len(s) && s[end] != '\n' && s[end] != '\r' && (quote == 0 || s[end] != quote) {
			end++
		}
		for end > i && (s[end-1] == ' ' || s[end-1] == '\t') {
			end--
		}
		return i, end
	}
	for end < len(s) && !strings.ContainsRune(" \t\r\n\"',;&<>(){}", rune(s[end])) {
		end++
	}
	return i, end
}

// emailRe finds an address: a local part of letters, digits and ._%+- and a dotted domain whose last
// label is letters.
var emailRe = lazyRegexp(`[\p{L}\p{N}._%+\-]+@((?:[\p{L}\p{N}](?:[\p{L}\p{N}\-]*[\p{L}\p{N}])?\.)+[\p{L}]{2,63})`)

// unitSuffixes are systemd unit types: getty@tty1.service and user@1000.service are unit names, not
// addresses.
var unitSuffixes = set("service", "socket", "device", "mount", "automount", "swap", "target", "path",
	"timer", "slice", "scope")

func redactEmails(s string, c Counts) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return emailRe().ReplaceAllStringFunc(s, func(m string) string {
		at := strings.LastIndexByte(m, '@')
		domain := m[at+1:]
		if unitSuffixes[strings.ToLower(domain[strings.LastIndexByte(domain, '.')+1:])] {
			return m
		}
		c[Email]++
		return elision + m[at:]
	})
}

// redactIPs replaces IPv4 and IPv6 addresses, except loopback and unspecified ones (127.0.0.1,
// 0.0.0.0, ::1, ::) and netmasks (255.255.255.0), which tell nothing about a network.
func redactIPs(s string, c Counts) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		ch := s[i]
		if !isHex(ch) && ch != ':' {
			i++
			continue
		}
		// A candidate is a maximal run of hex digits, ':' and '.', not glued to a word on its left.
		start := i
		for i < len(s) && (isHex(s[i]) || s[i] == ':' || s[i] == '.') {
			i++
		}
		if start > 0 && (isAlnum(s[start-1]) || s[start-1] == '_' || s[start-1] == '.') {
			for i < len(s) && isAlnum(s[i]) { // skip the rest of the word
				i++
			}
			continue
		}
		end := i
		for end > start && (s[end-1] == '.' || s[end-1] == ':') && !strings.HasSuffix(s[start:end], "::") {
			end-- // sentence punctuation, or host:port's colon
		}
		cand := s[start:end]
		// host:port keeps its port.
		if host, port, ok := strings.Cut(cand, ":"); ok && !strings.Contains(port, ":") && allDigits(port) {
			cand, end = host, start+len(host)
		}
		// An IPv6 zone (fe80::1%eth0) belongs to the address.
		if end < len(s) && s[end] == '%' && strings.Count(cand, ":") >= 2 {
			z := end + 1
			for z < len(s) && (isAlnum(s[z]) || s[z] == '_' || s[z] == '-' || s[z] == '.') {
				z++
			}
			if z > end+1 {
				end = z
				cand = s[start:end]
			}
		}
		if end < len(s) && (isAlnum(s[end]) || s[end] == '_') {
			for i < len(s) && isAlnum(s[i]) {
				i++
			}
			continue // glued to a word on its right
		}
		ip, ok := parseIP(cand)
		if !ok || keepIP(ip) || ip.Is4() && versionContext(s, start, end) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(ipMarker)
		last = end
		if i < end {
			i = end
		}
		c[IP]++
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// parseIP accepts a dotted quad (each part 0-255, leading zeros allowed) or an IPv6 address.
func parseIP(s string) (netip.Addr, bool) {
	if strings.Contains(s, ":") {
		if strings.Count(s, ":") < 2 {
			return netip.Addr{}, false
		}
		a, err := netip.ParseAddr(s)
		return a, err == nil && a.Is6()
	}
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	var q [4]byte
	for i, p := range parts {
		if p == "" || len(p) > 3 {
			return netip.Addr{}, false
		}
		n := 0
		for j := 0; j < len(p); j++ {
			if !isDigit(p[j]) {
				return netip.Addr{}, false
			}
			n = n*10 + int(p[j]-'0')
		}
		if n > 255 {
			return netip.Addr{}, false
		}
		q[i] = byte(n)
	}
	return netip.AddrFrom4(q), true
}

// versionLabels, ending the text before a dotted quad (spaces aside), make it a version number.
var versionLabels = []string{"(>=", "(<=", "(<<", "(>>", "(=", "(<", "(>", ">=", "<=", "<<", ">>",
	"version", "version:", "version=", "ver", "ver.", "release", "release:", "release=", "section",
	"sec", "sec.", "§"}

// versionContext reports whether the dotted quad s[start:end] is a four-part version rather than an
// address: it follows a comparison, a version label or a section sign (libpam0g (>= 0.99.7.1),
// Version: 1.2.5.1, Section 8.1.2.2), or
// carries a package revision (1.0.24.2-5, 1.2.3.57+dfsg1, 4.1~rc1; but not a range, 10.0.0.1-10.0.0.9).
func versionContext(s string, start, end int) bool {
	before := strings.ToLower(strings.TrimRight(s[max(0, start-16):start], " \t"))
	for _, l := range versionLabels {
		if strings.HasSuffix(before, l) {
			// A word label must be a whole word: "subversion 1.2.3.4" is no version label.
			k := len(before) - len(l)
			if isAlpha(l[0]) && k > 0 && isAlpha(before[k-1]) {
				continue
			}
			return true
		}
	}
	if end+1 >= len(s) || !isAlnum(s[end+1]) {
		return false
	}
	switch s[end] {
	case '+', '~':
		return true
	case '-':
		next := end + 1
		for next < len(s) && (isDigit(s[next]) || s[next] == '.') {
			next++
		}
		_, isAddr := parseIP(s[end+1 : next])
		return !isAddr
	}
	return false
}

func keepIP(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	if a.Is4() {
		// A netmask: ones then zeros, starting with 255.
		q := a.As4()
		m := uint32(q[0])<<24 | uint32(q[1])<<16 | uint32(q[2])<<8 | uint32(q[3])
		return q[0] == 255 && (^m)&(^m+1) == 0
	}
	return false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}
