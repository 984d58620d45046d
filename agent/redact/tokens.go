package redact

import (
	"math"
	"strings"
)

// Long opaque tokens. A token is looked for in runs of the base64/base64url alphabet
// ([A-Za-z0-9+/_-] and up to two '=' of padding), so dots, colons, spaces and quotes end a run.
//
// A run is cut into pieces at '/', '_' and '-'. A piece of five or more characters that reads like a
// word (see wordyRe: overlay2, http2cipher, Project2024, SHA256, a number) breaks
// the run into stretches; a shorter word is neutral; any other piece is random. A stretch's core runs
// from its first random piece to its last, its extent also takes in the short words at its ends. The
// core, or when the core is shorter than MinTokenLen but at least two thirds of it the extent, is a
// token when it has MinTokenLen or more characters and looks random:
//
//   - hex (digits and a-f only, some of each, dashes allowed): entropy at least 3.0 bits a character;
//   - otherwise: entropy at least 3.5 bits a character; its word segments (split at letter/digit
//     changes, lower-to-upper changes and symbols) average at most 4.2 characters (random base64
//     averages about 2.1, CamelCaseIdentifiers and words 5 or more); and less than 70% of it reads
//     as words (see wordShare: random base64 about 20%, identifiers made of words 70% or more).
//
// These keep paths (/usr/lib/x86_64-linux-gnu), unit and pod names (nginx-deployment-66b6c48dd5-7xk2p),
// identifiers, dates and versions, and catch random keys of 32 characters or more (more than 99.5% of
// random base64 or hex at 32 characters, all of them in tests from 40).
//
// Kept on purpose: a UUID (8-4-4-4-12 hex: boot ids, volume ids); a run right after a digest label
// (sha256:, sha512:, sha1:, md5:, SHA256: as OpenSSH prints fingerprints, sha-256=:); a pure-hex
// component of an absolute path (/var/lib/docker/overlay2/<64 hex>/diff: content-addressed
// directories); and every run of a value whose key promises a digest (see isDigestKey). A bare 64-hex
// run anywhere else is redacted: without a label or a field name there is no telling a sha256 from a
// 32-byte hex key.
//
// Whatever their length, JSON Web Tokens and a few well-known credential prefixes (GitHub, GitLab,
// Slack, AWS access key ids, Google API keys, Stripe and OpenAI-style secret keys) are tokens too.

// MinTokenLen is the shortest stretch the generic token rule considers.
const MinTokenLen = 32

const tokenMarker = "[redacted:token]"

var (
	uuidRe = lazyRegexp(`[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}`)
	// knownTokenRe matches tokens recognisable by shape alone.
	knownTokenRe = lazyRegexp(`eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*` +
		`|\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|glpat-[A-Za-z0-9_-]{20,}` +
		`|xox[abprse]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}` +
		`|[sr]k_(?:live|test)_[0-9A-Za-z]{16,}|sk-[A-Za-z0-9_-]{32,})\b`)
	digestLabelRe = lazyRegexp(`(?i)(?:sha-?(?:1|224|256|384|512)|md5|blake2b|blake3)(?:=:|[:=])$`)
)

// knownPrefixes are literal parts every knownTokenRe match holds; a text with none skips the regexp.
var knownPrefixes = []string{"eyJ", "gh", "github_pat_", "glpat-", "xox", "AKIA", "AIza", "k_live_", "k_test_", "sk-"}

func mayHoldKnownToken(s string) bool {
	for _, p := range knownPrefixes {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func isRunChar(c byte) bool { return isAlnum(c) || c == '+' || c == '/' || c == '_' || c == '-' }

// redactTokens replaces opaque tokens in s.
func redactTokens(s string, c Counts) string {
	if mayHoldKnownToken(s) {
		s = knownTokenRe().ReplaceAllStringFunc(s, func(string) string {
			c[Token]++
			return tokenMarker
		})
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if !isRunChar(s[i]) {
			i++
			continue
		}
		start := i
		for i < len(s) && isRunChar(s[i]) {
			i++
		}
		// Up to two '=' of padding belong to the run when nothing of the run follows them.
		end := i
		for p := 0; p < 2 && end < len(s) && s[end] == '='; p++ {
			end++
		}
		if end < len(s) && (s[end] == '=' || isRunChar(s[end])) {
			end = i
		}
		i = end
		if end-start < MinTokenLen || digestLabelRe().MatchString(s[max(0, start-10):start]) {
			continue
		}
		run := s[start:end]
		absPath := run[0] == '/'
		for _, st := range tokenStretches(run, absPath) {
			b.WriteString(s[last : start+st[0]])
			b.WriteString(tokenMarker)
			last = start + st[1]
			c[Token]++
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// tokenStretches returns the [start, end) offsets in run of the stretches that are tokens.
func tokenStretches(run string, absPath bool) [][2]int {
	// UUIDs count as words: they break stretches and are never tokens themselves.
	masked := []byte(run)
	for _, m := range uuidRe().FindAllStringIndex(run, -1) {
		for j := m[0]; j < m[1]; j++ {
			if masked[j] != '-' {
				masked[j] = 'u'
			}
		}
	}
	// A stretch's core runs from its first random piece to its last; its extent also takes in the
	// short words at either end. The core is judged when it is long enough on its own (so a hex
	// directory name stays a whole path component), the extent when the core is at least two thirds
	// of MinTokenLen (so a token whose ends look like short words is still caught, but a name of
	// short words such as http2cipher_TLS_NULL_WITH_NULL_NULL is not).
	var out [][2]int
	coreStart, coreEnd, extStart, extEnd := -1, -1, -1, -1
	closeStretch := func() {
		if coreStart >= 0 {
			s, e := coreStart, coreEnd
			if e-s < MinTokenLen && 3*(e-s) >= 2*MinTokenLen {
				s, e = extStart, extEnd
			}
			if e-s >= MinTokenLen && isRandom(run[s:e]) && !(absPath && isPathHex(run, s, e)) {
				out = append(out, [2]int{s, e})
			}
		}
		coreStart, coreEnd, extStart, extEnd = -1, -1, -1, -1
	}
	pendingStart := -1 // first short word since the last random piece or break
	for i := 0; i < len(run); {
		if run[i] == '/' || run[i] == '_' || run[i] == '-' {
			i++
			continue
		}
		j := i
		for j < len(run) && run[j] != '/' && run[j] != '_' && run[j] != '-' {
			j++
		}
		piece := string(masked[i:j])
		switch {
		case strings.Contains(piece, "u") && strings.Trim(piece, "u") == "" && len(piece) >= 4:
			closeStretch() // a UUID part
			pendingStart = -1
		case wordy(piece) && len(piece) >= 5:
			closeStretch()
			pendingStart = -1
		case wordy(piece):
			// A short word (diff, x86, 64) joins random pieces; at a stretch's ends it counts only
			// towards the extent.
			if pendingStart < 0 {
				pendingStart = i
			}
			if coreStart >= 0 {
				extEnd = j
			}
		default:
			if coreStart < 0 {
				coreStart, extStart = i, i
				if pendingStart >= 0 {
					extStart = pendingStart
				}
			}
			coreEnd, extEnd = j, j
			pendingStart = -1
		}
		i = j
	}
	closeStretch()
	return out
}

// isPathHex reports whether run[start:end] is pure hex and a whole '/' component of the path.
func isPathHex(run string, start, end int) bool {
	for i := start; i < end; i++ {
		if !isHex(run[i]) {
			return false
		}
	}
	return (start == 0 || run[start-1] == '/') && (end == len(run) || run[end] == '/')
}

// wordyRe matches pieces that read like words or numbers: lowercase words with digits (overlay2,
// x86, http2cipher), Capitalised words (Project2024), capitals with digits (TLS, 3DES, KRB5, SHA256)
// and numbers.
var wordyRe = lazyRegexp(`^(?:[a-z]+[0-9]*(?:[a-z]+[0-9]*)?|[A-Z][a-z]+[0-9]*|[0-9]*[A-Z]+[0-9]*|[0-9]+)$`)

// wordy reports whether a piece reads like a word or a number rather than random characters.
func wordy(p string) bool { return wordyRe().MatchString(p) }

// isRandom applies the entropy and segment rules to a stretch.
func isRandom(s string) bool {
	hex, digits, letters := true, 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isDigit(c):
			digits++
		case isAlpha(c):
			letters++
			hex = hex && isHex(c)
		case c == '-':
		default:
			hex = false
		}
	}
	h := entropy(s)
	if hex {
		return digits > 0 && letters > 0 && h >= 3.0
	}
	return h >= 3.5 && avgSegment(s) <= 4.2 && wordShare(s) < 0.7
}

// wordShare is the share of s made of segments that read as words: an optional capital, then two or
// more lowercase letters including a vowel (Head, Content, ing). Identifiers built of words
// (TestH12_HeadContentLengthNoBody, getElementsByTagNameNS) score 0.7 and more; random base64 scores
// about 0.2, and above 0.7 in fewer than one in a thousand at 24 characters.
func wordShare(s string) float64 {
	n := 0
	for i := 0; i < len(s); {
		j := i
		if isUpper(s[j]) {
			j++
		}
		k := j
		for k < len(s) && isLower(s[k]) {
			k++
		}
		if k-j < 2 {
			i++
			continue
		}
		if strings.ContainsAny(strings.ToLower(s[i:k]), "aeiouy") {
			n += k - i
		}
		i = k
	}
	return float64(n) / float64(len(s))
}

func entropy(s string) float64 {
	var n [256]int
	for i := 0; i < len(s); i++ {
		n[s[i]]++
	}
	h := 0.0
	for _, k := range n {
		if k > 0 {
			p := float64(k) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// avgSegment is the average length of the word segments of s: letters and digits split at
// letter/digit changes, at lower-to-upper changes, and at symbols.
func avgSegment(s string) float64 {
	const sym, lower, upper, digit = 0, 1, 2, 3
	class := func(c byte) int {
		switch {
		case isLower(c):
			return lower
		case isUpper(c):
			return upper
		case isDigit(c):
			return digit
		}
		return sym
	}
	segs, chars, prev := 0, 0, sym
	for i := 0; i < len(s); i++ {
		k := class(s[i])
		if k == sym {
			prev = sym
			continue
		}
		chars++
		if prev == sym || (prev == digit) != (k == digit) || (prev == lower && k == upper) {
			segs++
		}
		prev = k
	}
	if segs == 0 {
		return math.Inf(1)
	}
	return float64(chars) / float64(segs)
}
