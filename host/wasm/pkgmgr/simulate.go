package pkgmgr

import "strings"

// Step is one package an apt-get simulation (-s) would install, replace or remove:
//
//	Inst liblexfix1 [1.0] (1.1 Lexicon-Fixture-Security:bookworm-security [amd64])
//	Inst libnew2 (2.0 Debian:12.5/stable [amd64])
//	Remv oldpkg [0.9]
//
// From is the version replaced ("" for a new package), To the version installed ("" for a removal).
type Step struct {
	Remove bool
	Name   string
	Arch   string
	From   string
	To     string
}

// ParseSimulation reads the Inst and Remv lines of apt-get -s; Conf, Purg and every other line are
// skipped.
func ParseSimulation(out []byte) []Step {
	var steps []Step
	sc := newScanner(out)
	for sc.Scan() {
		line := sc.Text()
		var s Step
		var rest string
		switch {
		case strings.HasPrefix(line, "Inst "):
			rest = line[len("Inst "):]
		case strings.HasPrefix(line, "Remv "):
			s.Remove, rest = true, line[len("Remv "):]
		default:
			continue
		}
		name, rest, _ := strings.Cut(rest, " ")
		if s.Name, s.Arch, _ = strings.Cut(name, ":"); s.Name == "" {
			continue
		}
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, "[") {
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				continue
			}
			s.From, rest = rest[1:end], strings.TrimSpace(rest[end+1:])
		}
		if !s.Remove {
			if !strings.HasPrefix(rest, "(") {
				continue
			}
			v, tail, _ := strings.Cut(rest[1:], " ")
			s.To = strings.TrimSuffix(v, ")")
			// The architecture comes last, in brackets: "... [amd64])".
			if i := strings.LastIndex(tail, "["); i >= 0 && s.Arch == "" {
				if j := strings.IndexByte(tail[i:], ']'); j > 0 {
					s.Arch = tail[i+1 : i+j]
				}
			}
			if s.To == "" {
				continue
			}
		}
		steps = append(steps, s)
	}
	return steps
}
