// Package manifest parses and validates module manifests (lexicon/manifest/v1), strictly.
//
// A manifest is a module's whole contract: what it is (name, kind, version, class), what it takes
// (params, a closed JSON Schema 2020-12 object), what it returns (output), what it may touch
// (capabilities with their bounds) and how much it may use (limits). Unknown fields are refused, so a
// manifest never says more than the host understands.
//
//	m, err := manifest.Parse(data) // errcode manifest.* on any fault, statement.too_large over MaxSize
//	err = manifest.CheckContract(previous, m)
package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lexicon-fleet/lexicon/registry/internal/strictjson"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// SchemaV1 is the only manifest schema this package reads.
const SchemaV1 = "lexicon/manifest/v1"

// MaxSize caps a manifest's bytes; a manifest is a contract, not a data file.
const MaxSize = 256 << 10

// Kind is what a module is.
type Kind string

const (
	KindWord   Kind = "word"
	KindRecipe Kind = "recipe"
	KindDriver Kind = "driver"
)

// Class is how much a word may change (words) or what a driver provides (drivers).
type Class string

const (
	ClassLook        Class = "look"
	ClassChange      Class = "change"
	ClassDestructive Class = "destructive"
	ClassCloud       Class = "cloud"
	ClassDNS         Class = "dns"
)

// Rank orders word classes: look < change < destructive. Other classes rank 0.
func (c Class) Rank() int {
	switch c {
	case ClassLook:
		return 1
	case ClassChange:
		return 2
	case ClassDestructive:
		return 3
	}
	return 0
}

// Manifest is a parsed, validated module manifest.
type Manifest struct {
	Schema       string          `json:"schema"`
	Name         string          `json:"name"`
	Kind         Kind            `json:"kind"`
	Version      string          `json:"version"`
	Class        Class           `json:"class,omitempty"`
	Summary      string          `json:"summary"`
	Params       json.RawMessage `json:"params,omitempty"`
	Output       json.RawMessage `json:"output,omitempty"`
	Capabilities []Capability    `json:"capabilities,omitempty"`
	Limits       Limits          `json:"limits,omitzero"`
	Platforms    []string        `json:"platforms,omitempty"`
	// Privileged (drivers only) says the driver's work is the plane's own machine (the netns cloud
	// makes network namespaces): the plane runs it as its own user without Landlock, and only when
	// the admin enabled it with the unconfined consent. The publisher's signature covers it.
	Privileged bool    `json:"privileged,omitempty"`
	Module     Module  `json:"module"`
	Recipe     *Recipe `json:"recipe,omitempty"`

	params *jsonschema.Schema
	output *jsonschema.Schema
}

// Module names the artifact the manifest describes. File is a bare file name beside the manifest in a
// module folder; SHA256 and Size are filled in by lexicon-release build and pinned by the statement.
type Module struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
}

// Limits bound one invocation. Zero means the host default.
type Limits struct {
	MemoryMiB       int   `json:"memory_mib,omitempty"`
	WallTimeMS      int64 `json:"wall_time_ms,omitempty"`
	OutputBytes     int64 `json:"output_bytes,omitempty"`
	TranscriptBytes int64 `json:"transcript_bytes,omitempty"`
}

// Maxima no manifest may exceed, whatever a publisher signs.
const (
	MaxMemoryMiB       = 1024
	MaxWallTime        = 15 * time.Minute
	MaxOutputBytes     = 4 << 20
	MaxTranscriptBytes = 1 << 20
)

// Recipe is the self-healing part of a recipe manifest.
type Recipe struct {
	// Interval between checks, as a Go duration ("10m"); empty means DefaultInterval.
	Interval string `json:"interval,omitempty"`
	// Repair is the word run when the check fails; empty for check-only recipes.
	Repair string `json:"repair,omitempty"`
	// Scope is where the recipe applies: host, site, release or any.
	Scope string `json:"scope"`
	// NoRepair marks a recipe that only reports, whatever Repair says.
	NoRepair bool `json:"no_repair,omitempty"`
	// NodeDerived means the repair's params come only from this node's own check answer.
	NodeDerived bool `json:"node_derived,omitempty"`
}

// DefaultInterval is a recipe's check interval when the manifest names none.
const DefaultInterval = 10 * time.Minute

// CheckInterval returns the recipe's interval.
func (r *Recipe) CheckInterval() time.Duration {
	if r == nil || r.Interval == "" {
		return DefaultInterval
	}
	d, _ := time.ParseDuration(r.Interval) // validated in Parse
	return d
}

// The shapes below are loops, not package-level regexps: a bounded repeat compiles to one state per
// repetition, and package-level state is built at every start of every binary importing this package,
// each wasm worker of the agent included (host/RATIONALE.md, "Footprint"). manifest_shapes_test.go
// holds them to the regexps they replaced.

func lower(c byte) bool { return 'a' <= c && c <= 'z' }
func digit(c byte) bool { return '0' <= c && c <= '9' }
func alnum(c byte) bool { return lower(c) || 'A' <= c && c <= 'Z' || digit(c) }

// shape reports whether s is first then 0 to max-1 of rest.
func shape(s string, first, rest func(byte) bool, max int) bool {
	if len(s) == 0 || len(s) > max || !first(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !rest(s[i]) {
			return false
		}
	}
	return true
}

// ValidName reports whether s can name a module (a word, recipe or driver): `^[a-z][a-z0-9_]{0,62}$`.
func ValidName(s string) bool {
	return shape(s, lower, func(c byte) bool { return lower(c) || digit(c) || c == '_' }, 63)
}

// validPlatform: `^[a-z0-9]+/[a-z0-9]+$`.
func validPlatform(s string) bool {
	goos, goarch, ok := strings.Cut(s, "/")
	lowerDigit := func(c byte) bool { return lower(c) || digit(c) }
	return ok && shape(goos, lowerDigit, lowerDigit, len(goos)) && shape(goarch, lowerDigit, lowerDigit, len(goarch))
}

// validFile: `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`.
func validFile(s string) bool {
	return shape(s, alnum, func(c byte) bool { return alnum(c) || c == '.' || c == '_' || c == '-' }, 128)
}

// Parse decodes and validates a manifest.
func Parse(data []byte) (*Manifest, error) {
	var m Manifest
	if err := strictjson.Decode(data, MaxSize, &m); err != nil {
		var unknown *strictjson.UnknownFieldError
		switch {
		case errors.As(err, &unknown):
			return nil, errcode.Wrap(err, errcode.ManifestUnknownField, "manifest has unknown field %q", unknown.Field).
				With(errcode.DetailField, unknown.Field)
		case errors.Is(err, strictjson.ErrTooLarge):
			return nil, errcode.New(errcode.StatementTooLarge, "manifest is over %d bytes (it has %d)", MaxSize, len(data)).
				With(errcode.DetailLimit, MaxSize)
		}
		return nil, errcode.Wrap(err, errcode.ManifestMalformed, "manifest is malformed")
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// SubjectName is the statement subject of the module artifact, e.g. "word/disk_usage@1.0.0.wasm" or
// "driver/cloud-linode@1.0.0/linux-amd64".
func (m *Manifest) SubjectName() string {
	switch m.Kind {
	case KindDriver:
		platform := ""
		if len(m.Platforms) > 0 {
			platform = m.Platforms[0]
		}
		return fmt.Sprintf("driver/%s-%s@%s/%s", m.Class, m.Name, m.Version, dash(platform))
	default:
		return fmt.Sprintf("%s/%s@%s.wasm", m.Kind, m.Name, m.Version)
	}
}

// ManifestSubjectName is the statement subject of the manifest itself.
func (m *Manifest) ManifestSubjectName() string {
	if m.Kind == KindWord {
		return fmt.Sprintf("manifest/%s@%s.json", m.Name, m.Version)
	}
	return fmt.Sprintf("manifest/%s/%s@%s.json", m.Kind, m.Name, m.Version)
}

func dash(platform string) string {
	b := []byte(platform)
	for i, c := range b {
		if c == '/' {
			b[i] = '-'
		}
	}
	return string(b)
}

// ParamsSchema is the compiled params schema; nil for modules that take none.
func (m *Manifest) ParamsSchema() *jsonschema.Schema { return m.params }

// OutputSchema is the compiled output schema; nil for modules that declare none.
func (m *Manifest) OutputSchema() *jsonschema.Schema { return m.output }

// Capability returns the declared capability named cap, if any.
func (m *Manifest) Capability(cap string) (Capability, bool) {
	for _, c := range m.Capabilities {
		if c.Cap == cap {
			return c, true
		}
	}
	return Capability{}, false
}

// NamesProperty is the params property of a recipe that the agent fills with the node's own names.
const NamesProperty = "names"

// Declaration is a recipe check's input: every top-level property of the params schema that has a
// default takes it, and the property "names", when the schema declares it, takes the node's own names.
// Only the signed manifest and the node's own configuration feed it; the result is checked against the
// params schema (word.param_invalid).
func (m *Manifest) Declaration(names []string) (json.RawMessage, error) {
	var schema struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	decl := map[string]any{}
	if len(m.Params) > 0 {
		if err := json.Unmarshal(m.Params, &schema); err != nil {
			return nil, errcode.Wrap(err, errcode.WordParamInvalid, "%s: params schema does not decode", m.Name).With(errcode.DetailField, "")
		}
	}
	for name, p := range schema.Properties {
		switch {
		case name == NamesProperty:
			if len(names) > 0 {
				decl[name] = names
			}
		case len(p.Default) > 0:
			decl[name] = p.Default
		}
	}
	b, err := json.Marshal(decl)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.WordParamInvalid, "%s: declaration does not encode", m.Name).With(errcode.DetailField, "")
	}
	if err := m.CheckParams(b); err != nil {
		return nil, err
	}
	return b, nil
}
