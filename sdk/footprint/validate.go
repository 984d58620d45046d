package footprint

import (
	"net/netip"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Validate checks the rules of the format on a footprint, decoded or built in Go: every value has its
// shape, no two items of a kind share a key, and a unit's files are files of the footprint. Faults are
// footprint.invalid naming the member as Decode does.
func Validate(fp *Footprint) error {
	if fp.Schema != SchemaName {
		return invalid("/schema", "must be %q, not %q", SchemaName, fp.Schema)
	}
	n := len(fp.Files) + len(fp.Units) + len(fp.Users) + len(fp.Groups) + len(fp.Sysctl) + len(fp.Packages)
	if fp.Firewall != nil {
		n++
	}
	if n > MaxItems {
		return invalid("", "a footprint holds at most %d items, this one %d", MaxItems, n)
	}
	files := map[string]bool{}
	for i, f := range fp.Files {
		at := "/files/" + strconv.Itoa(i)
		if err := validFile(f, at); err != nil {
			return err
		}
		if files[f.Path] {
			return invalid(at+"/path", "%s is declared twice", f.Path)
		}
		files[f.Path] = true
	}
	seen := map[string]bool{}
	for i, u := range fp.Units {
		at := "/units/" + strconv.Itoa(i)
		if err := validUnit(u, at, files); err != nil {
			return err
		}
		if seen[u.Name] {
			return invalid(at+"/name", "unit %s is declared twice", u.Name)
		}
		seen[u.Name] = true
	}
	seen = map[string]bool{}
	for i, u := range fp.Users {
		at := "/users/" + strconv.Itoa(i)
		if err := validUser(u, at); err != nil {
			return err
		}
		if seen[u.Name] {
			return invalid(at+"/name", "user %s is declared twice", u.Name)
		}
		seen[u.Name] = true
	}
	seen = map[string]bool{}
	for i, g := range fp.Groups {
		at := "/groups/" + strconv.Itoa(i)
		if !ValidName(g.Name) {
			return invalid(at+"/name", "%q is not a user or group name (a lowercase letter or _, then up to 31 of a-z 0-9 _ -)", g.Name)
		}
		if err := validState(g.State, at+"/state"); err != nil {
			return err
		}
		if seen[g.Name] {
			return invalid(at+"/name", "group %s is declared twice", g.Name)
		}
		seen[g.Name] = true
	}
	if fp.Firewall != nil {
		if err := validFirewall(fp.Firewall, "/firewall"); err != nil {
			return err
		}
	}
	seen = map[string]bool{}
	for i, s := range fp.Sysctl {
		at := "/sysctl/" + strconv.Itoa(i)
		if !ValidSysctlKey(s.Key) {
			return invalid(at+"/key", "%q is not a sysctl key (dotted words of letters, digits, _ and -)", s.Key)
		}
		if len(s.Value) > MaxSysctlValue || !printable(s.Value, true) || strings.Trim(s.Value, " \t") == "" {
			return invalid(at+"/value", "a sysctl value is 1 to %d printable bytes on one line", MaxSysctlValue)
		}
		if seen[s.Key] {
			return invalid(at+"/key", "sysctl %s is declared twice", s.Key)
		}
		seen[s.Key] = true
	}
	seen = map[string]bool{}
	for i, p := range fp.Packages {
		at := "/packages/" + strconv.Itoa(i)
		if !ValidPackageName(p.Name) {
			return invalid(at+"/name", "%q is not a package name", p.Name)
		}
		if err := validState(p.State, at+"/state"); err != nil {
			return err
		}
		if p.Version != "" && (p.State != StatePresent || !validVersion(p.Version)) {
			return invalid(at+"/version", "a version (digits, letters and .+~:-) is given only for a present package")
		}
		if seen[p.Name] {
			return invalid(at+"/name", "package %s is declared twice", p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}

// Item states, under their footprint names.
const (
	StatePresent = capv1.StatePresent
	StateAbsent  = capv1.StateAbsent
)

func validState(s, at string) error {
	if s != StatePresent && s != StateAbsent {
		return invalid(at, "must be present or absent, not %q", s)
	}
	return nil
}

func validFile(f File, at string) error {
	if !ValidPath(f.Path) {
		return invalid(at+"/path", "%q is not an absolute, clean path of printable characters under %d bytes", f.Path, MaxPath)
	}
	if !validDigest(f.SHA256) {
		return invalid(at+"/sha256", "must be 64 lowercase hex digits")
	}
	if f.Size < 0 || f.Size > MaxFileSize {
		return invalid(at+"/size", "must be between 0 and %d", MaxFileSize)
	}
	if _, err := ParseMode(f.Mode); err != nil {
		return invalid(at+"/mode", "%v", err)
	}
	if !ValidName(f.Owner) {
		return invalid(at+"/owner", "%q is not a user name", f.Owner)
	}
	if !ValidName(f.Group) {
		return invalid(at+"/group", "%q is not a group name", f.Group)
	}
	return nil
}

// ParseMode reads a file mode of four octal digits ("0644"): permission bits only, since a setuid or
// setgid file written by the agent would be a program anyone could run as root.
func ParseMode(s string) (uint32, error) {
	if len(s) != 4 {
		return 0, errString("a mode is four octal digits, such as 0644")
	}
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		return 0, errString("a mode is four octal digits, such as 0644")
	}
	if m&0o7000 != 0 {
		return 0, errString("a mode never sets setuid, setgid or sticky bits")
	}
	return uint32(m), nil
}

// FormatMode writes m as ParseMode reads it.
func FormatMode(m uint32) string {
	s := strconv.FormatUint(uint64(m&0o7777), 8)
	return strings.Repeat("0", 4-len(s)) + s
}

type errString string

func (e errString) Error() string { return string(e) }

// unitSuffixes are the unit types a footprint names.
var unitSuffixes = []string{".service", ".socket", ".timer", ".path", ".mount", ".target"}

func validUnit(u Unit, at string, files map[string]bool) error {
	if !ValidUnitName(u.Name) {
		return invalid(at+"/name", "%q is not a unit name (systemd's characters, ending .service, .socket, .timer, .path, .mount or .target)", u.Name)
	}
	switch u.OnChange {
	case "", OnChangeRestart, OnChangeReload:
	default:
		return invalid(at+"/on_change", "must be restart or reload, not %q", u.OnChange)
	}
	seen := map[string]bool{}
	for j, f := range u.Files {
		fat := at + "/files/" + strconv.Itoa(j)
		if !files[f] {
			return invalid(fat, "%s is not a file of this footprint", f)
		}
		if seen[f] {
			return invalid(fat, "%s is listed twice", f)
		}
		seen[f] = true
	}
	return nil
}

// How a unit takes a change to one of its files.
const (
	OnChangeRestart = capv1.OnChangeRestart
	OnChangeReload  = capv1.OnChangeReload
)

func validUser(u User, at string) error {
	if !ValidName(u.Name) {
		return invalid(at+"/name", "%q is not a user name (a lowercase letter or _, then up to 31 of a-z 0-9 _ -)", u.Name)
	}
	if err := validState(u.State, at+"/state"); err != nil {
		return err
	}
	if u.State == StateAbsent {
		switch {
		case u.Shell != "":
			return invalid(at+"/shell", "an absent user has no shell")
		case u.Home != "":
			return invalid(at+"/home", "an absent user has no home")
		case u.Groups != nil:
			return invalid(at+"/groups", "an absent user has no groups")
		case u.SSHKeys != nil:
			return invalid(at+"/ssh_keys", "an absent user has no keys")
		case u.System:
			return invalid(at+"/system", "system matters only when a user is created")
		}
		return nil
	}
	if u.Shell != "" && !ValidPath(u.Shell) {
		return invalid(at+"/shell", "%q is not an absolute, clean path", u.Shell)
	}
	if u.Home != "" && !ValidPath(u.Home) {
		return invalid(at+"/home", "%q is not an absolute, clean path", u.Home)
	}
	seen := map[string]bool{}
	for j, g := range u.Groups {
		gat := at + "/groups/" + strconv.Itoa(j)
		if !ValidName(g) {
			return invalid(gat, "%q is not a group name", g)
		}
		if seen[g] {
			return invalid(gat, "group %s is listed twice", g)
		}
		seen[g] = true
	}
	if len(u.SSHKeys) > MaxSSHKeys {
		return invalid(at+"/ssh_keys", "at most %d keys", MaxSSHKeys)
	}
	for j, k := range u.SSHKeys {
		if len(k) > MaxSSHKey || !printable(k, false) || k == "" || k[0] == '#' || k[0] == ' ' || !strings.Contains(strings.TrimRight(k, " "), " ") {
			return invalid(at+"/ssh_keys/"+strconv.Itoa(j), "an authorized key is one line of printable characters, its type then its key, at most %d bytes", MaxSSHKey)
		}
	}
	return nil
}

// Protocols a firewall rule opens.
const (
	ProtocolTCP = "tcp"
	ProtocolUDP = "udp"
)

func validFirewall(fw *Firewall, at string) error {
	if err := validState(fw.State, at+"/state"); err != nil {
		return err
	}
	if fw.State == StateAbsent && len(fw.Inbound) > 0 {
		return invalid(at+"/inbound", "an absent firewall opens nothing")
	}
	if len(fw.Inbound) > MaxRules {
		return invalid(at+"/inbound", "at most %d rules", MaxRules)
	}
	for i, r := range fw.Inbound {
		rat := at + "/inbound/" + strconv.Itoa(i)
		if r.Protocol != ProtocolTCP && r.Protocol != ProtocolUDP {
			return invalid(rat+"/protocol", "must be tcp or udp, not %q", r.Protocol)
		}
		if r.Port < 1 || r.Port > 65535 {
			return invalid(rat+"/port", "must be a port, 1 to 65535")
		}
		if r.To != 0 && (r.To <= r.Port || r.To > 65535) {
			return invalid(rat+"/to", "ends a range: above port, at most 65535")
		}
		if len(r.Sources) > MaxSources {
			return invalid(rat+"/sources", "at most %d sources", MaxSources)
		}
		var prefixes []netip.Prefix
		for j, s := range r.Sources {
			sat := rat + "/sources/" + strconv.Itoa(j)
			p, err := netip.ParsePrefix(s)
			if err != nil || p.Addr().Zone() != "" || p.Addr().Is4In6() {
				return invalid(sat, "%q is not a CIDR prefix (10.0.0.0/8, 2001:db8::/32)", s)
			}
			if p.Masked() != p || p.String() != s {
				return invalid(sat, "%q is not written as its prefix: %s", s, p.Masked())
			}
			for _, q := range prefixes {
				if q.Overlaps(p) {
					return invalid(sat, "%s overlaps %s of the same rule", p, q)
				}
			}
			prefixes = append(prefixes, p)
		}
	}
	return nil
}

// ValidPath reports whether p is an absolute, clean path of printable UTF-8 under MaxPath bytes, and not
// "/" itself.
func ValidPath(p string) bool {
	return len(p) > 1 && len(p) <= MaxPath && p[0] == '/' && path.Clean(p) == p && printable(p, false)
}

// ValidName reports whether s can be a user or group name: a lowercase letter or _, then up to 31 of
// lowercase letters, digits, _ and -, Debian's default NAME_REGEX without its trailing $.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 32 || !(s[0] == '_' || 'a' <= s[0] && s[0] <= 'z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ValidUnitName reports whether s is a unit name a footprint may hold: systemd's characters (letters,
// digits, ":_.@\\-"), at most 255 bytes, not starting with "-", with one of the unit types it manages.
func ValidUnitName(s string) bool {
	if len(s) == 0 || len(s) > 255 || s[0] == '-' || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(":_.@\\-", c) >= 0) {
			return false
		}
	}
	for _, suf := range unitSuffixes {
		if strings.HasSuffix(s, suf) && len(s) > len(suf) {
			return true
		}
	}
	return false
}

// ValidSysctlKey reports whether s is a sysctl key: at least two dot-separated words of letters,
// digits, _ and -, at most 255 bytes. It maps to a file beneath /proc/sys with no way out of it.
func ValidSysctlKey(s string) bool {
	if len(s) == 0 || len(s) > 255 {
		return false
	}
	words := strings.Split(s, ".")
	if len(words) < 2 {
		return false
	}
	for _, w := range words {
		if w == "" {
			return false
		}
		for i := 0; i < len(w); i++ {
			c := w[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
				return false
			}
		}
	}
	return true
}

// ValidPackageName reports whether s is a Debian package name: a lowercase letter or digit, then at
// least one of lowercase letters, digits, +, - and ., at most 128 bytes.
func ValidPackageName(s string) bool {
	if len(s) < 2 || len(s) > 128 || !('a' <= s[0] && s[0] <= 'z' || '0' <= s[0] && s[0] <= '9') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func validVersion(s string) bool {
	if len(s) == 0 || len(s) > 128 || !('0' <= s[0] && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(".+~:-", c) >= 0) {
			return false
		}
	}
	return true
}

func validDigest(d string) bool {
	if len(d) != 64 {
		return false
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// printable reports whether s is valid UTF-8 without control characters (a tab allowed when tab).
func printable(s string, tab bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 && !(tab && r == '\t') || r == 0x7f {
			return false
		}
	}
	return true
}
