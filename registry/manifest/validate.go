package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/mod/semver"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func invalid(field, format string, args ...any) error {
	return errcode.New(errcode.ManifestInvalid, "%s: %s", field, fmt.Sprintf(format, args...)).With(errcode.DetailField, field)
}

func (m *Manifest) validate() error {
	if m.Schema != SchemaV1 {
		return invalid("schema", "schema must be %q, not %q", SchemaV1, m.Schema)
	}
	if !ValidName(m.Name) {
		return invalid("name", "name %q must be lowercase letters, digits and _ (at most 63), starting with a letter", m.Name)
	}
	if !semver.IsValid("v"+m.Version) || semver.Build("v"+m.Version) != "" || semver.Canonical("v"+m.Version) != "v"+m.Version {
		return invalid("version", "version %q is not MAJOR.MINOR.PATCH semver", m.Version)
	}
	if m.Summary == "" || len(m.Summary) > 200 {
		return invalid("summary", "summary must be 1 to 200 characters")
	}
	if !validFile(m.Module.File) {
		return invalid("module.file", "module file %q must be a bare file name", m.Module.File)
	}
	if m.Module.SHA256 != "" && !cas.ValidDigest(m.Module.SHA256) {
		return invalid("module.sha256", "sha256 must be 64 lowercase hex digits")
	}
	if m.Module.Size < 0 {
		return invalid("module.size", "size must not be negative")
	}
	if err := m.validateLimits(); err != nil {
		return err
	}
	switch m.Kind {
	case KindWord:
		if err := m.validateWord(); err != nil {
			return err
		}
	case KindRecipe:
		if err := m.validateRecipe(); err != nil {
			return err
		}
	case KindDriver:
		if err := m.validateDriver(); err != nil {
			return err
		}
	default:
		return invalid("kind", "kind must be word, recipe or driver, not %q", m.Kind)
	}
	return m.validateCapabilities()
}

func (m *Manifest) validateLimits() error {
	l := m.Limits
	switch {
	case l.MemoryMiB < 0 || l.MemoryMiB > MaxMemoryMiB:
		return invalid("limits.memory_mib", "memory_mib must be 0 to %d", MaxMemoryMiB)
	case l.WallTimeMS < 0 || l.WallTimeMS > MaxWallTime.Milliseconds():
		return invalid("limits.wall_time_ms", "wall_time_ms must be 0 to %d", MaxWallTime.Milliseconds())
	case l.OutputBytes < 0 || l.OutputBytes > MaxOutputBytes:
		return invalid("limits.output_bytes", "output_bytes must be 0 to %d", MaxOutputBytes)
	case l.TranscriptBytes < 0 || l.TranscriptBytes > MaxTranscriptBytes:
		return invalid("limits.transcript_bytes", "transcript_bytes must be 0 to %d", MaxTranscriptBytes)
	}
	return nil
}

func (m *Manifest) validateWord() error {
	switch m.Class {
	case ClassLook, ClassChange, ClassDestructive:
	default:
		return invalid("class", "a word's class must be look, change or destructive, not %q", m.Class)
	}
	if m.Recipe != nil || len(m.Platforms) > 0 || m.Privileged {
		return invalid("kind", "a word takes neither recipe, platforms nor privileged")
	}
	if len(m.Params) == 0 || len(m.Output) == 0 {
		return invalid("params", "a word declares both params and output schemas")
	}
	return m.compileSchemas()
}

func (m *Manifest) validateRecipe() error {
	if m.Class != "" {
		return invalid("class", "a recipe has no class")
	}
	if len(m.Platforms) > 0 || m.Privileged {
		return invalid("platforms", "a recipe takes neither platforms nor privileged")
	}
	r := m.Recipe
	if r == nil {
		return invalid("recipe", "a recipe needs its recipe section")
	}
	switch r.Scope {
	case "host", "site", "release", "any":
	default:
		return invalid("recipe.scope", "scope must be host, site, release or any, not %q", r.Scope)
	}
	if r.Interval != "" {
		d, err := time.ParseDuration(r.Interval)
		if err != nil || d < time.Minute || d > 24*time.Hour {
			return invalid("recipe.interval", "interval %q must be a duration from 1m to 24h", r.Interval)
		}
	}
	if r.Repair != "" && !ValidName(r.Repair) {
		return invalid("recipe.repair", "repair word %q is not a word name", r.Repair)
	}
	if r.NodeDerived && r.Repair == "" {
		return invalid("recipe.node_derived", "node_derived needs a repair word")
	}
	if len(m.Params) > 0 && len(m.Output) == 0 {
		return invalid("output", "a recipe with params declares its output too")
	}
	return m.compileSchemas()
}

func (m *Manifest) validateDriver() error {
	if m.Class != ClassCloud && m.Class != ClassDNS {
		return invalid("class", "a driver's class must be cloud or dns, not %q", m.Class)
	}
	if len(m.Platforms) != 1 || !validPlatform(m.Platforms[0]) {
		return invalid("platforms", "a driver names exactly one os/arch platform")
	}
	if m.Recipe != nil || len(m.Params) > 0 || len(m.Output) > 0 || len(m.Capabilities) > 0 || m.Limits != (Limits{}) {
		return invalid("kind", "a driver takes no recipe, params, output, capabilities or limits")
	}
	return nil
}

func (m *Manifest) compileSchemas() error {
	if len(m.Params) > 0 {
		s, err := compileSchema("params", m.Params)
		if err != nil {
			return err
		}
		if err := closedObject(m.Params); err != nil {
			return err
		}
		m.params = s
	}
	if len(m.Output) > 0 {
		s, err := compileSchema("output", m.Output)
		if err != nil {
			return err
		}
		m.output = s
	}
	return nil
}

// closedObject insists on a top-level object schema with additionalProperties false, so that a param
// the word never reads cannot ride along in a job.
func closedObject(raw []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return errcode.Wrap(err, errcode.ManifestSchemaInvalid, "params schema is not JSON").With(errcode.DetailField, "params")
	}
	obj, _ := doc.(map[string]any)
	if obj["type"] != "object" {
		return errcode.New(errcode.ManifestParamsOpen, `params schema must have "type": "object"`).With(errcode.DetailField, "params.type")
	}
	if ap, ok := obj["additionalProperties"].(bool); !ok || ap {
		return errcode.New(errcode.ManifestParamsOpen, `params schema must set "additionalProperties": false`).
			With(errcode.DetailField, "params.additionalProperties")
	}
	return nil
}

// refusingLoader keeps $ref inside the document: a schema must never make the host read a file or URL.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema refers to %q; only references inside the document are allowed", url)
}

// compileSchema compiles raw as a self-contained JSON Schema 2020-12 document.
func compileSchema(field string, raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, errcode.Wrap(err, errcode.ManifestSchemaInvalid, "%s schema is not JSON", field).With(errcode.DetailField, field)
	}
	if obj, ok := doc.(map[string]any); ok {
		if s, ok := obj["$schema"]; ok && s != "https://json-schema.org/draft/2020-12/schema" {
			return nil, errcode.New(errcode.ManifestSchemaInvalid, "%s schema must be JSON Schema 2020-12", field).With(errcode.DetailField, field)
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refusingLoader{})
	const loc = "urn:lexicon:schema"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, errcode.Wrap(err, errcode.ManifestSchemaInvalid, "%s schema", field).With(errcode.DetailField, field)
	}
	s, err := c.Compile(loc)
	if err != nil {
		var se *jsonschema.SchemaValidationError
		if errors.As(err, &se) {
			return nil, errcode.Wrap(err, errcode.ManifestSchemaInvalid, "%s is not valid JSON Schema 2020-12", field).With(errcode.DetailField, field)
		}
		return nil, errcode.Wrap(err, errcode.ManifestSchemaInvalid, "%s schema does not compile", field).With(errcode.DetailField, field)
	}
	return s, nil
}
