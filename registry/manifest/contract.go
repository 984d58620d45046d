package manifest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Break is one way a word's new manifest breaks the contract of its released one.
type Break struct {
	Word   string `json:"word"`
	Field  string `json:"field"`
	Change string `json:"change"` // removed, added, changed
}

func (b Break) String() string { return fmt.Sprintf("%s: %s %s", b.Word, b.Field, b.Change) }

// CheckContract compares a released word with its successor of the same name. A word's name, class and
// params are fixed forever; its output may gain fields but never lose or redefine one. The error is
// contract.broken with details.word, details.field (the first break) and details.breaks (all of them).
func CheckContract(old, next *Manifest) error {
	breaks := ContractBreaks(old, next)
	if len(breaks) == 0 {
		return nil
	}
	texts := make([]string, len(breaks))
	for i, b := range breaks {
		texts[i] = b.Field + " " + b.Change
	}
	return errcode.New(errcode.ContractBroken, "word %s breaks its contract: %s; a changed contract needs a new word name",
		old.Name, strings.Join(texts, "; ")).
		With(errcode.DetailWord, old.Name).With(errcode.DetailField, breaks[0].Field).With(errcode.DetailBreaks, breaks)
}

// ContractBreaks lists every break, in a stable order; nil when the contract holds or old is no word.
func ContractBreaks(old, next *Manifest) []Break {
	if old.Kind != KindWord || next.Kind != KindWord || old.Name != next.Name {
		return nil
	}
	var out []Break
	add := func(field, change string) { out = append(out, Break{Word: old.Name, Field: field, Change: change}) }
	if old.Class != next.Class {
		add("class", "changed")
	}
	// Params are fixed: any difference at all is a break, named as precisely as we can.
	op, np := decode(old.Params), decode(next.Params)
	if !reflect.DeepEqual(op, np) {
		n := len(out)
		diffProperties("params", op, np, true, add)
		for _, kw := range keywordsBut(op, np, "properties") {
			add("params."+kw, "changed")
		}
		if len(out) == n {
			add("params", "changed")
		}
	}
	// Output may grow: only what the old output promised is checked.
	oo, no := decode(old.Output), decode(next.Output)
	diffProperties("output", oo, no, false, add)
	if !reflect.DeepEqual(oo["type"], no["type"]) {
		add("output.type", "changed")
	}
	newRequired := stringSet(no["required"])
	for _, r := range stringList(oo["required"]) {
		if !newRequired[r] {
			add("output."+r, "no longer required")
		}
	}
	return out
}

// diffProperties reports properties removed or redefined between two object schemas, and added ones
// when strict.
func diffProperties(prefix string, old, next map[string]any, strict bool, add func(field, change string)) {
	op, _ := old["properties"].(map[string]any)
	np, _ := next["properties"].(map[string]any)
	for _, name := range sortedKeys(op) {
		nv, ok := np[name]
		switch {
		case !ok:
			add(prefix+"."+name, "removed")
		case !reflect.DeepEqual(op[name], nv):
			add(prefix+"."+name, "changed")
		}
	}
	if strict {
		for _, name := range sortedKeys(np) {
			if _, ok := op[name]; !ok {
				add(prefix+"."+name, "added")
			}
		}
	}
}

// keywordsBut lists top-level schema keywords, other than skip, whose values differ.
func keywordsBut(a, b map[string]any, skip string) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		if k != skip && !reflect.DeepEqual(a[k], b[k]) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func decode(raw json.RawMessage) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(raw, &m) // validated when parsed
	return m
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func stringList(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func stringSet(v any) map[string]bool {
	set := map[string]bool{}
	for _, s := range stringList(v) {
		set[s] = true
	}
	return set
}
