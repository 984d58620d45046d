package main

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// unit is what the systemctl shim reads of a systemd service unit: enough to start, supervise and
// restart a service the way systemd would for Type=simple. Sandboxing directives (PrivateTmp,
// ReadWritePaths, ...) are ignored: the instance's namespaces are the sandbox.
type unit struct {
	Pre        []execLine
	Start      execLine
	Restart    string // no, always, on-failure
	RestartSec time.Duration
	Env        []string
	EnvFiles   []envFile
	WorkDir    string
}

type execLine struct {
	Argv       []string
	IgnoreFail bool // "-" prefix
}

type envFile struct {
	Path     string
	Optional bool
}

var unitNameRE = regexp.MustCompile(`^[A-Za-z0-9@_.:-]{1,200}\.service$`)

// unitName is the service a systemctl argument names ("lexicon-agent" or "lexicon-agent.service").
func unitName(arg string) (string, error) {
	if !strings.Contains(arg, ".") {
		arg += ".service"
	}
	if !unitNameRE.MatchString(arg) || strings.Contains(arg, "..") {
		return "", fmt.Errorf("%q is not a service unit name", arg)
	}
	return arg, nil
}

// parseUnit reads a unit file's [Service] section.
func parseUnit(text string) (unit, error) {
	u := unit{Restart: "no", RestartSec: 100 * time.Millisecond}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var pending string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if pending != "" {
			line = pending + " " + line
			pending = ""
		}
		if strings.HasSuffix(line, "\\") {
			pending = strings.TrimSuffix(line, "\\")
			continue
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			section = strings.Trim(line, "[]")
			continue
		}
		if section != "Service" {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			return u, fmt.Errorf("line %q is not key=value", line)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "ExecStartPre":
			if val == "" {
				u.Pre = nil
				continue
			}
			e, err := parseExec(val)
			if err != nil {
				return u, fmt.Errorf("ExecStartPre: %v", err)
			}
			u.Pre = append(u.Pre, e)
		case "ExecStart":
			e, err := parseExec(val)
			if err != nil {
				return u, fmt.Errorf("ExecStart: %v", err)
			}
			u.Start = e
		case "Restart":
			u.Restart = val
		case "RestartSec":
			d, err := parseSec(val)
			if err != nil {
				return u, fmt.Errorf("RestartSec: %v", err)
			}
			u.RestartSec = d
		case "Environment":
			words, err := splitWords(val)
			if err != nil {
				return u, fmt.Errorf("Environment: %v", err)
			}
			u.Env = append(u.Env, words...)
		case "EnvironmentFile":
			ef := envFile{Path: val}
			if strings.HasPrefix(val, "-") {
				ef = envFile{Path: val[1:], Optional: true}
			}
			u.EnvFiles = append(u.EnvFiles, ef)
		case "WorkingDirectory":
			u.WorkDir = strings.TrimPrefix(val, "-")
		}
	}
	if len(u.Start.Argv) == 0 {
		return u, fmt.Errorf("the unit has no ExecStart")
	}
	return u, nil
}

// parseExec reads an Exec line: its prefixes ("-" ignore failure; "@", "+", "!", ":" accepted and
// dropped: there is one user and no sandbox to escape) then a command line.
func parseExec(val string) (execLine, error) {
	var e execLine
	for len(val) > 0 && strings.ContainsRune("-@+!:", rune(val[0])) {
		if val[0] == '-' {
			e.IgnoreFail = true
		}
		val = val[1:]
	}
	argv, err := splitWords(val)
	if err != nil {
		return e, err
	}
	if len(argv) == 0 || !strings.HasPrefix(argv[0], "/") {
		return e, fmt.Errorf("%q must start with an absolute path", val)
	}
	e.Argv = argv
	return e, nil
}

// splitWords splits a systemd command line or Environment value: words separated by blanks, single
// or double quotes grouping, backslash escaping the next character.
func splitWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\':
			escaped, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, fmt.Errorf("unterminated quote or escape in %q", s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// parseSec reads a systemd time span: a bare number is seconds; ms, s, min suffixes.
func parseSec(v string) (time.Duration, error) {
	v = strings.ReplaceAll(v, " ", "")
	if strings.HasSuffix(v, "min") {
		v = strings.TrimSuffix(v, "min") + "m"
	}
	if v != "" && strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' }) < 0 {
		v += "s"
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > time.Hour {
		return 0, fmt.Errorf("%q is not a time span up to an hour", v)
	}
	return d, nil
}
