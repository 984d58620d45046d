package roles

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

// Limits of a role file. A file's content travels inline (as text or base64), so the file bounds the
// content of all its files together; one file is bounded again on its own.
const (
	MaxFileBytes    = 8 << 20 // a role file as sent
	MaxContentBytes = 4 << 20 // one file's content, decoded
	maxDepth        = 64      // nesting of a YAML document
)

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(api.RoleSchema()))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const loc = "urn:lexicon:role"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
})

// Parsed is a role file read whole: the role as the plane keeps it, and the content of its files by
// sha256.
type Parsed struct {
	Role     Spec
	Contents map[string][]byte
}

// Spec is one version of a role as the plane keeps it: its own footprint, fully rendered (every file
// by sha256, every default filled in, each item's enforce the role's), so that a node's footprint is
// the merge of its roles' and nothing else.
type Spec struct {
	Name        string               `json:"name"`
	Description string               `json:"description,omitempty"`
	Enforce     bool                 `json:"enforce,omitempty"`
	Footprint   *footprint.Footprint `json:"footprint"`
}

// The role file's own shapes, where they differ from the footprint's: content instead of a digest,
// and defaults an author may leave out.
type fileDoc struct {
	Path          string  `json:"path"`
	Content       *string `json:"content"`
	ContentBase64 *string `json:"content_base64"`
	Mode          string  `json:"mode"`
	Owner         string  `json:"owner"`
	Group         string  `json:"group"`
}

type unitDoc struct {
	Name     string   `json:"name"`
	Enabled  *bool    `json:"enabled"`
	Started  *bool    `json:"started"`
	Files    []string `json:"files"`
	OnChange string   `json:"on_change"`
}

type roleDoc struct {
	Name        string              `json:"name"`
	Description string              `json:"description"`
	Enforce     bool                `json:"enforce"`
	Packages    []footprint.Package `json:"packages"`
	Files       []fileDoc           `json:"files"`
	Units       []unitDoc           `json:"units"`
	Users       []footprint.User    `json:"users"`
	Groups      []footprint.Group   `json:"groups"`
	Firewall    *footprint.Firewall `json:"firewall"`
	Sysctl      []footprint.Sysctl  `json:"sysctl"`
}

// Parse reads a role file, YAML or JSON (JSON is read as the YAML it also is), checks it against
// the role schema and the footprint's rules, and renders its footprint. Every fault is role.invalid
// with details.field a JSON pointer to the member ("/files/0/mode"), or role.too_large.
func Parse(data []byte) (*Parsed, error) {
	if len(data) > MaxFileBytes {
		return nil, errcode.New(errcode.RoleTooLarge, "a role file is at most %d bytes, this one %d", MaxFileBytes, len(data)).
			With(errcode.DetailLimitBytes, MaxFileBytes)
	}
	if !utf8.Valid(data) {
		return nil, invalid("", "a role file is UTF-8 text")
	}
	v, err := readYAML(data)
	if err != nil {
		return nil, err
	}
	doc, err := json.Marshal(v)
	if err != nil {
		return nil, invalid("", "the role file holds a value JSON cannot carry: %v", err)
	}
	s, err := compiled()
	if err != nil {
		return nil, errcode.Wrap(err, errcode.InternalError, "the role schema does not compile")
	}
	if err := manifest.CheckSchema(s, doc, errcode.RoleInvalid, "role file"); err != nil {
		return nil, err
	}
	var rd roleDoc
	if err := json.Unmarshal(doc, &rd); err != nil {
		return nil, invalid("", "the role file does not decode: %v", err)
	}
	return rd.render()
}

func invalid(field, format string, args ...any) *errcode.Error {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	return errcode.New(errcode.RoleInvalid, "%s", msg).With(errcode.DetailField, field)
}

// render turns a decoded role file into its Spec: contents hashed, defaults filled, and the footprint
// held to the footprint's own rules (whose pointers are the role file's, the lists being the same).
func (rd *roleDoc) render() (*Parsed, error) {
	fp := &footprint.Footprint{Schema: footprint.SchemaName}
	p := &Parsed{Contents: map[string][]byte{}}
	for i, f := range rd.Files {
		at := "/files/" + strconv.Itoa(i)
		var content []byte
		switch {
		case f.Content != nil && f.ContentBase64 != nil:
			return nil, invalid(at, "give content or content_base64, not both")
		case f.Content != nil:
			content = []byte(*f.Content)
		case f.ContentBase64 != nil:
			b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(*f.ContentBase64), ""))
			if err != nil {
				return nil, invalid(at+"/content_base64", "is not standard base64: %v", err)
			}
			content = b
		default:
			return nil, invalid(at, "give content or content_base64")
		}
		if len(content) > MaxContentBytes {
			return nil, errcode.New(errcode.RoleTooLarge, "%s: a file's content is at most %d bytes, this one %d", at, MaxContentBytes, len(content)).
				With(errcode.DetailLimitBytes, MaxContentBytes).With(errcode.DetailField, at)
		}
		sum := sha256.Sum256(content)
		digest := hex.EncodeToString(sum[:])
		p.Contents[digest] = content
		fp.Files = append(fp.Files, footprint.File{Path: f.Path, SHA256: digest, Size: int64(len(content)),
			Mode: or(f.Mode, "0644"), Owner: or(f.Owner, "root"), Group: or(f.Group, "root"), Enforce: rd.Enforce})
	}
	for _, u := range rd.Units {
		fp.Units = append(fp.Units, footprint.Unit{Name: u.Name, Enabled: u.Enabled == nil || *u.Enabled,
			Started: u.Started == nil || *u.Started, Files: u.Files, OnChange: u.OnChange, Enforce: rd.Enforce})
	}
	for _, u := range rd.Users {
		u.State, u.Enforce = or(u.State, footprint.StatePresent), rd.Enforce
		fp.Users = append(fp.Users, u)
	}
	for _, g := range rd.Groups {
		g.State, g.Enforce = or(g.State, footprint.StatePresent), rd.Enforce
		fp.Groups = append(fp.Groups, g)
	}
	if rd.Firewall != nil {
		fw := *rd.Firewall
		fw.State, fw.Enforce = or(fw.State, footprint.StatePresent), rd.Enforce
		fp.Firewall = &fw
	}
	for _, s := range rd.Sysctl {
		s.Enforce = rd.Enforce
		fp.Sysctl = append(fp.Sysctl, s)
	}
	for _, k := range rd.Packages {
		k.State, k.Enforce = or(k.State, footprint.StatePresent), rd.Enforce
		fp.Packages = append(fp.Packages, k)
	}
	if err := footprint.Validate(fp); err != nil {
		var e *errcode.Error
		if errors.As(err, &e) {
			field, _ := e.Details[errcode.DetailField].(string)
			return nil, errcode.New(errcode.RoleInvalid, "%s", e.Message).With(errcode.DetailField, field)
		}
		return nil, invalid("", "%v", err)
	}
	p.Role = Spec{Name: rd.Name, Description: rd.Description, Enforce: rd.Enforce, Footprint: fp}
	return p, nil
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// readYAML reads one YAML document into the values encoding/json makes, walking the node tree itself:
// aliases are refused (an alias bomb expands a small file into gigabytes), as are repeated keys
// (the last one would win unseen) and keys that are not strings.
func readYAML(data []byte) (any, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return nil, invalid("", "the role file is not YAML or JSON: %v", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, invalid("", "a role file holds one document")
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 {
		return nil, invalid("", "a role file holds one document")
	}
	return value(root.Content[0], "", 0)
}

func value(n *yaml.Node, at string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, invalid(at, "nested deeper than %d", maxDepth)
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				return nil, invalid(at, "a key must be a string (line %d)", k.Line)
			}
			key := at + "/" + escape(k.Value)
			if _, dup := m[k.Value]; dup {
				return nil, invalid(key, "is given twice (line %d)", k.Line)
			}
			v, err := value(n.Content[i+1], key, depth+1)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			v, err := value(c, at+"/"+strconv.Itoa(i), depth+1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, invalid(at, "%v", err)
			}
			return b, nil
		case "!!int", "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, invalid(at, "%v", err)
			}
			return f, nil
		default: // strings, and timestamps or binary kept as the text they were written as
			return n.Value, nil
		}
	case yaml.AliasNode:
		return nil, invalid(at, "YAML aliases are not taken in a role file (line %d)", n.Line)
	}
	return nil, invalid(at, "unexpected YAML node (line %d)", n.Line)
}

// escape writes a key as a JSON pointer token.
func escape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}
