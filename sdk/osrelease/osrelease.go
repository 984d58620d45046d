// Package osrelease reads os-release(5) and knows when each release's standard support ends: words
// reporting a machine's release and the plane judging it share one table.
//
//	r := osrelease.Parse(data) // the bytes of /etc/os-release
//	if end, ok := osrelease.SupportEnd(r); ok && now.After(end.Standard) { ... }
//
// It is standard library only, so words (built for wasip1) can use it.
package osrelease

import (
	"strings"
	"time"
)

// Release is the part of os-release a report needs.
type Release struct {
	ID         string // "debian", "ubuntu"
	IDLike     []string
	VersionID  string // "12", "22.04"
	Codename   string // VERSION_CODENAME: "bookworm"
	PrettyName string
	// SupportEnd is the release's own SUPPORT_END (YYYY-MM-DD), which few releases set; zero when
	// absent or not a date.
	SupportEnd time.Time
}

// maxLines bounds what Parse reads: os-release is a dozen lines.
const maxLines = 512

// Parse reads os-release's KEY=value lines. Values may be quoted with " or ' and, inside double
// quotes, escape \", \\, \$ and \` as a shell would; lines that are not assignments are skipped, and
// whatever is malformed is left out rather than guessed.
func Parse(data []byte) Release {
	var r Release
	for i, line := range strings.Split(string(data), "\n") {
		if i >= maxLines {
			break
		}
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v, ok = unquote(v)
		if !ok {
			continue
		}
		switch k {
		case "ID":
			r.ID = v
		case "ID_LIKE":
			r.IDLike = strings.Fields(v)
		case "VERSION_ID":
			r.VersionID = v
		case "VERSION_CODENAME":
			r.Codename = v
		case "PRETTY_NAME":
			r.PrettyName = v
		case "SUPPORT_END":
			if t, err := time.Parse(time.DateOnly, v); err == nil {
				r.SupportEnd = t
			}
		}
	}
	return r
}

// unquote undoes os-release's shell-style quoting of one value.
func unquote(v string) (string, bool) {
	if v == "" {
		return "", true
	}
	switch q := v[0]; q {
	case '"', '\'':
		if len(v) < 2 || v[len(v)-1] != q {
			return "", false
		}
		body := v[1 : len(v)-1]
		if q == '\'' {
			return body, !strings.ContainsRune(body, '\'')
		}
		var b strings.Builder
		for i := 0; i < len(body); i++ {
			c := body[i]
			if c == '\\' && i+1 < len(body) && strings.IndexByte("\"\\$`", body[i+1]) >= 0 {
				i++
				c = body[i]
			} else if c == '"' {
				return "", false
			}
			b.WriteByte(c)
		}
		return b.String(), true
	}
	if strings.ContainsAny(v, " \t\"'\\$`") {
		return "", false
	}
	return v, true
}
