// Package strictjson decodes outside JSON the strict way: capped, one value, no repeated keys, and (unless
// the format says otherwise) no unknown keys.
//
// It rests on github.com/go-json-experiment/json (the encoding/json/v2 prototype), which refuses
// repeated object keys and unknown members natively and decodes several times faster than
// encoding/json; statements of hundreds of modules are verified on every agent start.
package strictjson

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ErrTooLarge is returned for input over the caller's cap.
var ErrTooLarge = errors.New("input over its size cap")

// UnknownFieldError names a field the target type does not have.
type UnknownFieldError struct{ Field string }

func (e *UnknownFieldError) Error() string { return fmt.Sprintf("unknown field %q", e.Field) }

// DuplicateKeyError names a key that appears twice in one object. Different parsers keep different
// copies of a repeated key, so a signed document that repeats one could mean two things.
type DuplicateKeyError struct{ Key string }

func (e *DuplicateKeyError) Error() string { return fmt.Sprintf("key %q appears twice", e.Key) }

// Decode decodes data into v. It refuses input over limit bytes, anything but exactly one JSON value,
// repeated keys, and fields v does not declare. Names match case-sensitively.
func Decode(data []byte, limit int, v any) error {
	if len(data) > limit {
		return ErrTooLarge
	}
	err := json.Unmarshal(data, v, json.RejectUnknownMembers(true))
	if err == nil {
		return nil
	}
	var se *json.SemanticError
	if errors.As(err, &se) && errors.Is(se.Err, json.ErrUnknownName) {
		return &UnknownFieldError{Field: lastToken(se.JSONPointer)}
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName) {
		return &DuplicateKeyError{Key: lastToken(syn.JSONPointer)}
	}
	return err
}

// DecodeOpen is Decode for formats whose spec tells consumers to ignore members they do not know (the
// in-toto statement layer): unknown members are skipped, while the cap, the one value and the refusal of
// repeated keys still hold.
func DecodeOpen(data []byte, limit int, v any) error {
	if len(data) > limit {
		return ErrTooLarge
	}
	err := json.Unmarshal(data, v, json.RejectUnknownMembers(false))
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName) {
		return &DuplicateKeyError{Key: lastToken(syn.JSONPointer)}
	}
	return err
}

func lastToken(p jsontext.Pointer) string {
	s := string(p)
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}
