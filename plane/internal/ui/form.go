package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// schema is the part of a word's params JSON Schema a form is made from. Whatever else the schema
// says, the plane checks when the job is queued, and its error is shown next to the field it names.
type schema struct {
	Type        any                `json:"type"`
	Description string             `json:"description"`
	Properties  map[string]*schema `json:"properties"`
	Required    []string           `json:"required"`
	Items       *schema            `json:"items"`
	Enum        []any              `json:"enum"`
	Pattern     string             `json:"pattern"`
	MinLength   *int               `json:"minLength"`
	MaxLength   *int               `json:"maxLength"`
	Minimum     *float64           `json:"minimum"`
	Maximum     *float64           `json:"maximum"`
	Default     json.RawMessage    `json:"default"`
	// WriteOnly marks a secret: its field is a password input, and a form shown again never holds it.
	WriteOnly bool `json:"writeOnly"`
}

func (s *schema) kind() string {
	if len(s.Enum) > 0 {
		return "enum"
	}
	switch t := s.Type.(type) {
	case string:
		return t
	case []any: // ["string", "null"] and the like: the first non-null type
		for _, x := range t {
			if str, _ := x.(string); str != "" && str != "null" {
				return str
			}
		}
	}
	if s.Properties != nil {
		return "object"
	}
	return "json"
}

// field is one input of a generated form; Path, a JSON pointer into the params, is its form name and
// the detail the plane's params error names.
type field struct {
	Path, Name, Kind, Description string
	Required                      bool
	// HTMLPattern is the schema's pattern made whole-value, as the pattern attribute matches: the
	// browser refuses a value before it is sent, and the plane checks again.
	HTMLPattern          string
	MinLength, MaxLength *int
	Min, Max             *float64
	Enum                 []string
	ItemKind             string // for arrays: the kind of one item, one a line
	Fields               []*field
	Value                string
	Checked              bool
	Error                string
	Secret               bool // write-only: typed, sent, never rendered back
}

// fields lays out the properties of an object schema, required ones first, then by name.
func fields(s *schema, prefix string) []*field {
	if s == nil {
		return nil
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if req[names[i]] != req[names[j]] {
			return req[names[i]]
		}
		return names[i] < names[j]
	})
	var out []*field
	for _, n := range names {
		p := s.Properties[n]
		if p == nil {
			continue
		}
		f := &field{Path: prefix + "/" + escPointer(n), Name: n, Kind: p.kind(), Description: p.Description, Required: req[n],
			MinLength: p.MinLength, MaxLength: p.MaxLength, Min: p.Minimum, Max: p.Maximum, Secret: p.WriteOnly}
		if p.Pattern != "" {
			f.HTMLPattern = `[\s\S]*(?:` + p.Pattern + `)[\s\S]*`
		}
		for _, e := range p.Enum {
			f.Enum = append(f.Enum, enumText(e))
		}
		switch f.Kind {
		case "object":
			f.Fields = fields(p, f.Path)
		case "array":
			f.ItemKind = "json"
			if p.Items != nil {
				f.ItemKind = p.Items.kind()
				for _, e := range p.Items.Enum {
					f.Enum = append(f.Enum, enumText(e))
				}
			}
		}
		if len(p.Default) > 0 && !f.Secret {
			var v any
			if json.Unmarshal(p.Default, &v) == nil {
				f.Value = enumText(v)
				f.Checked = v == true
			}
		}
		out = append(out, f)
	}
	return out
}

func enumText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func escPointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// fill sets each field's value from a submitted form and builds the params object. A value that is not
// even of its field's kind (an integer field holding "ten") is marked on its field here; every rule of
// the schema is the plane's to check.
func fill(fs []*field, form url.Values) (map[string]any, bool) {
	out := map[string]any{}
	ok := true
	for _, f := range fs {
		raw := form.Get(f.Path)
		f.Value = raw
		switch f.Kind {
		case "object":
			sub, subOK := fill(f.Fields, form)
			ok = ok && subOK
			if len(sub) > 0 || f.Required {
				out[f.Name] = sub
			}
			continue
		case "boolean":
			f.Checked = raw == "true"
			if raw == "" && !f.Required {
				continue
			}
			out[f.Name] = f.Checked
			continue
		}
		if raw == "" && !f.Required {
			continue
		}
		switch f.Kind {
		case "array":
			items := []any{}
			for _, line := range strings.Split(raw, "\n") {
				line = strings.TrimRight(line, "\r")
				if strings.TrimSpace(line) == "" {
					continue
				}
				v, err := scalar(f.ItemKind, line)
				if err != "" {
					f.Error, ok = err, false
					break
				}
				items = append(items, v)
			}
			out[f.Name] = items
		default:
			v, err := scalar(f.Kind, raw)
			if err != "" {
				f.Error, ok = err, false
				continue
			}
			out[f.Name] = v
		}
	}
	return out, ok
}

func scalar(kind, raw string) (any, string) {
	switch kind {
	case "integer":
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if err != nil {
			return nil, "not a whole number"
		}
		return n, ""
	case "number":
		n, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil {
			return nil, "not a number"
		}
		return n, ""
	case "boolean":
		return raw == "true", ""
	case "json":
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			return nil, "not JSON"
		}
		return v, ""
	}
	return raw, ""
}

// mark puts the plane's params error next to the field its pointer names; it reports whether one did.
func mark(fs []*field, pointer, msg string) bool {
	for _, f := range fs {
		if f.Path == pointer || strings.HasPrefix(pointer, f.Path+"/") && f.Kind == "array" {
			f.Error = msg
			return true
		}
		if mark(f.Fields, pointer, msg) {
			return true
		}
	}
	return false
}

type runData struct {
	Node   string
	Nodes  []api.Node
	Batch  *batchForm // the form for a word across the nodes a label picks
	Words  []api.WordRef
	Word   *api.Word
	Fields []*field
	Error  string
}

// runPage chooses a node, then a word, then shows the word's params form.
// runPage is refused below the role that may queue a job, as the menu hides it: a viewer would only
// fill a form the plane then refuses.
func (u *UI) runPage(w http.ResponseWriter, r *http.Request) {
	if _, err := u.may(r, api.JobsCreate); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.runForm(w, r, http.StatusOK, r.URL.Query(), false)
}

func (u *UI) runForm(w http.ResponseWriter, r *http.Request, status int, form url.Values, submitted bool) {
	d := runData{Node: form.Get("node")}
	if d.Node == "" {
		list, err := run(u, r, api.NodesList, u.cfg.Nodes.List, api.NodesListQuery{State: api.NodeActive, Limit: 200})
		if err != nil {
			u.fail(w, r, nil, err)
			return
		}
		d.Nodes = list.Nodes
		if _, err := u.may(r, api.BatchesCreate); err == nil {
			d.Batch = newBatchForm(list.Nodes) // offered only to a token that may start one
		}
		v := from(r)
		u.render(w, r, status, "run", &v, d)
		return
	}
	n, err := run(u, r, api.NodesShow, u.cfg.Nodes.Show, d.Node)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Node, d.Words = n.ID, n.Vocabulary
	if word := form.Get("word"); word != "" {
		wd, err := run(u, r, api.NodesWord, func(ctx context.Context, who api.Token, word string) (api.Word, error) {
			return u.cfg.Nodes.Word(ctx, who, n.ID, word)
		}, word)
		if err != nil {
			u.fail(w, r, nil, err)
			return
		}
		d.Word = &wd
		var s schema
		if err := json.Unmarshal(wd.Params, &s); err != nil {
			u.fail(w, r, nil, errcode.Wrap(err, errcode.ManifestInvalid, "the params schema of %s cannot be read", wd.Name))
			return
		}
		d.Fields = fields(&s, "")
		if submitted {
			u.submit(w, r, d, form)
			return
		}
	}
	v := from(r)
	u.render(w, r, status, "run", &v, d)
}

func (u *UI) run(w http.ResponseWriter, r *http.Request) {
	// The form is read before the job is queued; a token the route table does not let queue jobs is
	// refused first, as the API would refuse it.
	if _, err := u.may(r, api.JobsCreate); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.runForm(w, r, http.StatusOK, r.PostForm, true)
}

// submit queues the job through the API; a params error the plane returns is shown by its field.
func (u *UI) submit(w http.ResponseWriter, r *http.Request, d runData, form url.Values) {
	v := from(r)
	params, ok := fill(d.Fields, form)
	if !ok {
		d.Error = "Some values are not of their field's kind; see the marked fields."
		u.render(w, r, http.StatusBadRequest, "run", &v, d)
		return
	}
	raw, _ := json.Marshal(params)
	job, err := run(u, r, api.JobsCreate, u.cfg.Jobs.Create, api.JobRequest{Node: d.Node, Word: d.Word.Name, Params: raw})
	if err == nil {
		http.Redirect(w, r, Prefix+"/jobs/"+url.PathEscape(job.ID), http.StatusSeeOther)
		return
	}
	e := errcode.From(err, errcode.InternalError)
	if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
		u.fail(w, r, nil, err)
		return
	}
	field, _ := e.Details[errcode.DetailField].(string)
	if e.Code != errcode.WordParamInvalid || !mark(d.Fields, field, e.Message) {
		d.Error = errMessage(r, err)
	}
	u.render(w, r, errcode.Status(e.Code), "run", &v, d)
}
