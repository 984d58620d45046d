package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The cloud-init subset an instance runs: a shell script ("#!"), or a "#cloud-config" document whose
// write_files and runcmd are honoured (other modules are skipped, and the output log says which).

// userData is user data parsed and checked at create, so that what cannot run is refused before
// anything is made.
type userData struct {
	Script     []byte // a "#!" script, run as it is
	WriteFiles []writeFile
	RunCmd     []command
	Skipped    []string // cloud-config modules this cloud does not run
}

type writeFile struct {
	Path    string
	Content []byte // decoded
	Mode    uint32
	User    string
	Group   string
	Append  bool
}

// command is one runcmd entry: a string runs with /bin/sh -c, a list is an argv run as it is.
type command struct {
	Shell string
	Argv  []string
}

func (c command) String() string {
	if c.Argv != nil {
		return strings.Join(c.Argv, " ")
	}
	return c.Shell
}

// writablePrefixes are the instance's own folders (bind-mounted over these paths inside it): on the
// host image write_files may write there and nowhere else, so user data cannot overwrite the host's
// files by accident. An instance with a root of its own may write anywhere in it. runcmd is not so
// bounded; see RATIONALE.md.
var writablePrefixes = []string{"/etc/lexicon-agent", "/var/lib/lexicon-agent", "/usr/local/bin", "/etc/systemd/system"}

var ownerRE = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}(:[a-z_][a-z0-9_-]{0,31})?$`)

// parseUserData reads user data; an error says what is wrong in words for cloud.invalid. ownRoot
// says the instance has a root of its own (an image other than host).
func parseUserData(text string, ownRoot bool) (userData, error) {
	var ud userData
	switch {
	case strings.TrimSpace(text) == "":
		return ud, nil
	case strings.HasPrefix(text, "#!"):
		ud.Script = []byte(text)
		return ud, nil
	case !strings.HasPrefix(text, "#cloud-config"):
		return ud, fmt.Errorf("user data must be a #cloud-config document or a #! script")
	}
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return ud, fmt.Errorf("user data is not YAML: %v", err)
	}
	for key, node := range doc {
		switch key {
		case "write_files":
			var files []struct {
				Path        string `yaml:"path"`
				Content     string `yaml:"content"`
				Permissions string `yaml:"permissions"`
				Owner       string `yaml:"owner"`
				Encoding    string `yaml:"encoding"`
				Append      bool   `yaml:"append"`
				Defer       bool   `yaml:"defer"`
			}
			if err := node.Decode(&files); err != nil {
				return ud, fmt.Errorf("write_files: %v", err)
			}
			for i, f := range files {
				wf, err := checkFile(f.Path, f.Content, f.Permissions, f.Owner, f.Encoding, ownRoot)
				if err != nil {
					return ud, fmt.Errorf("write_files[%d]: %v", i, err)
				}
				wf.Append = f.Append
				ud.WriteFiles = append(ud.WriteFiles, wf)
			}
		case "runcmd":
			if node.Kind != yaml.SequenceNode {
				return ud, fmt.Errorf("runcmd must be a list")
			}
			for i, n := range node.Content {
				c, err := checkCommand(n)
				if err != nil {
					return ud, fmt.Errorf("runcmd[%d]: %v", i, err)
				}
				ud.RunCmd = append(ud.RunCmd, c)
			}
		default:
			ud.Skipped = append(ud.Skipped, key)
		}
	}
	return ud, nil
}

func checkFile(p, content, perms, owner, encoding string, ownRoot bool) (writeFile, error) {
	wf := writeFile{Path: p, Mode: 0o644, User: "root", Group: "root"}
	if !path.IsAbs(p) || path.Clean(p) != p {
		return wf, fmt.Errorf("path %q must be absolute and clean", p)
	}
	inside := ownRoot
	for _, pre := range writablePrefixes {
		if strings.HasPrefix(p, pre+"/") {
			inside = true
		}
	}
	if !inside {
		return wf, fmt.Errorf("path %q is outside the instance's own folders (%s)", p, strings.Join(writablePrefixes, ", "))
	}
	if perms != "" {
		m, err := strconv.ParseUint(strings.TrimPrefix(perms, "0o"), 8, 32)
		if err != nil || m > 0o7777 {
			return wf, fmt.Errorf("permissions %q are not octal file permissions", perms)
		}
		wf.Mode = uint32(m)
	}
	if owner != "" {
		if !ownerRE.MatchString(owner) {
			return wf, fmt.Errorf("owner %q is not user[:group]", owner)
		}
		wf.User, wf.Group, _ = strings.Cut(owner, ":")
		if wf.Group == "" {
			wf.Group = wf.User
		}
	}
	data := []byte(content)
	var err error
	switch strings.ToLower(encoding) {
	case "", "text/plain":
	case "b64", "base64":
		data, err = base64.StdEncoding.DecodeString(strings.TrimSpace(content))
	case "gz", "gzip":
		data, err = gunzip(data)
	case "gz+b64", "gz+base64", "gzip+b64", "gzip+base64":
		if data, err = base64.StdEncoding.DecodeString(strings.TrimSpace(content)); err == nil {
			data, err = gunzip(data)
		}
	default:
		return wf, fmt.Errorf("encoding %q is not one of b64, gz, gz+b64", encoding)
	}
	if err != nil {
		return wf, fmt.Errorf("content does not decode as %s: %v", encoding, err)
	}
	wf.Content = data
	return wf, nil
}

// maxDecoded caps what a compressed write_files entry may expand to.
const maxDecoded = 64 << 20

func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(r, maxDecoded+1))
	if err == nil && len(out) > maxDecoded {
		err = fmt.Errorf("expands past %d bytes", maxDecoded)
	}
	return out, err
}

func checkCommand(n *yaml.Node) (command, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if strings.TrimSpace(n.Value) == "" {
			return command{}, fmt.Errorf("empty command")
		}
		return command{Shell: n.Value}, nil
	case yaml.SequenceNode:
		var argv []string
		for _, a := range n.Content {
			if a.Kind != yaml.ScalarNode {
				return command{}, fmt.Errorf("an argv holds strings only")
			}
			argv = append(argv, a.Value)
		}
		if len(argv) == 0 || argv[0] == "" {
			return command{}, fmt.Errorf("empty argv")
		}
		return command{Argv: argv}, nil
	}
	return command{}, fmt.Errorf("a command is a string or a list of strings")
}
