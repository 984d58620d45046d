package pkgmgr

import "strings"

// CompareVersions orders two Debian version strings ([epoch:]upstream[-revision]) as dpkg does
// (deb-version(7)): negative when a is older than b, zero when equal, positive when newer. Kernel
// release names (6.1.0-18-amd64) order the same way. Malformed parts compare as text, never panic.
func CompareVersions(a, b string) int {
	ea, ua, ra := splitVersion(a)
	eb, ub, rb := splitVersion(b)
	if c := compareNumber(ea, eb); c != 0 {
		return c
	}
	if c := compareFragment(ua, ub); c != 0 {
		return c
	}
	return compareFragment(ra, rb)
}

func splitVersion(v string) (epoch, upstream, revision string) {
	if e, rest, ok := strings.Cut(v, ":"); ok && e != "" && strings.Trim(e, "0123456789") == "" {
		epoch, v = e, rest
	}
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		return epoch, v[:i], v[i+1:]
	}
	return epoch, v, ""
}

// order is a non-digit's weight: ~ before everything (even the end), letters before other characters.
func order(c byte) int {
	switch {
	case c == '~':
		return -1
	case c >= '0' && c <= '9':
		return 0
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		return int(c)
	}
	return int(c) + 256
}

// compareFragment compares alternating runs of non-digits (by order) and digits (numerically).
func compareFragment(a, b string) int {
	for a != "" || b != "" {
		for (a != "" && !isDigit(a[0])) || (b != "" && !isDigit(b[0])) {
			var ca, cb int
			if a != "" {
				ca = order(a[0])
			}
			if b != "" {
				cb = order(b[0])
			}
			if a != "" && isDigit(a[0]) {
				ca = 0
			}
			if b != "" && isDigit(b[0]) {
				cb = 0
			}
			if ca != cb {
				return sign(ca - cb)
			}
			if a != "" {
				a = a[1:]
			}
			if b != "" {
				b = b[1:]
			}
		}
		na, nb := leadingDigits(a), leadingDigits(b)
		a, b = a[len(na):], b[len(nb):]
		if c := compareNumber(na, nb); c != 0 {
			return c
		}
	}
	return 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func leadingDigits(s string) string {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i]
}

// compareNumber compares two runs of digits of any length as numbers.
func compareNumber(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return sign(len(a) - len(b))
	}
	return strings.Compare(a, b)
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
