// Package strictjson decodes outside JSON the strict way: capped, one value, no repeated keys, and (unless
// the format says otherwise) no unknown keys. What it refuses is told in JSON's words (a string, an
// array), never in the Go types it decodes into.
//
// It rests on github.com/go-json-experiment/json (the encoding/json/v2 prototype), which refuses
// repeated object keys and unknown members natively and decodes several times faster than
// encoding/json; statements of hundreds of modules are verified on every agent start.
package strictjson

import (
	"encoding"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

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

// TypeError is a value the field cannot take: another kind of JSON value than the field's, or one of
// its kind that does not fit (a number out of range, a string that is not a time).
type TypeError struct {
	Path   string // JSON Pointer to the value; "" for the whole document
	Want   string // what the field takes, in JSON's words ("a string", "an array")
	Got    string // the kind of the value found ("a number")
	Reason string // why a value of the right kind does not fit; "" when the kind is wrong
}

func (e *TypeError) Error() string {
	where := "the document"
	if e.Path != "" {
		where = e.Path
	}
	if e.Reason != "" {
		return fmt.Sprintf("%s must be %s: %s", where, e.Want, e.Reason)
	}
	return fmt.Sprintf("%s must be %s, not %s", where, e.Want, e.Got)
}

// SyntaxError is input that is not JSON.
type SyntaxError struct{ Err error }

func (e *SyntaxError) Error() string {
	return "not valid JSON: " + strings.TrimPrefix(e.Err.Error(), "jsontext: ")
}

func (e *SyntaxError) Unwrap() error { return e.Err }

// Decode decodes data into v. It refuses input over limit bytes, anything but exactly one JSON value,
// repeated keys, and fields v does not declare. Names match case-sensitively.
func Decode(data []byte, limit int, v any) error {
	if len(data) > limit {
		return ErrTooLarge
	}
	return refusal(json.Unmarshal(data, v, json.RejectUnknownMembers(true)))
}

// refusal is what Decode and DecodeOpen return for the decoder's err: one of this package's errors,
// told in JSON's words, or err itself.
func refusal(err error) error {
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
	if errors.As(err, &se) && se.GoType != nil {
		return typeError(se)
	}
	if syn != nil || errors.Is(err, io.ErrUnexpectedEOF) {
		return &SyntaxError{Err: err}
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
	return refusal(json.Unmarshal(data, v, json.RejectUnknownMembers(false)))
}

// typeError says in JSON's words what se's Go type takes and what the value was.
func typeError(se *json.SemanticError) *TypeError {
	want, kinds := takes(se.GoType)
	e := &TypeError{Path: string(se.JSONPointer), Want: want, Got: kind(se.JSONKind)}
	switch {
	case se.Err == nil, se.JSONKind != 0 && kinds != "" && !strings.ContainsRune(kinds, rune(se.JSONKind)):
		// The wrong kind of value, whatever the type's own decoder said of it.
	case se.GoType == reflect.TypeFor[time.Time]():
		e.Reason = "the string is not one (2025-01-31T12:00:00Z is)"
	case errors.Is(se.Err, strconv.ErrRange):
		e.Reason = fmt.Sprintf("%s is out of range", se.JSONValue)
	case errors.Is(se.Err, strconv.ErrSyntax):
		e.Reason = fmt.Sprintf("%s is not one", se.JSONValue)
	default:
		e.Reason = strings.TrimPrefix(se.Err.Error(), "json: ")
	}
	return e
}

// takes names in JSON's words the values a Go type decodes from, and the JSON kinds those are ("" when
// unknown).
func takes(t reflect.Type) (string, string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[time.Time]():
		return "a time in RFC 3339", `"`
	case reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()),
		reflect.PointerTo(t).Implements(reflect.TypeFor[json.UnmarshalerFrom]()):
		return "a value its decoder takes", "" // its own decoder says what is wrong
	case reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()):
		return "a string", `"`
	}
	switch t.Kind() {
	case reflect.String:
		return "a string", `"`
	case reflect.Bool:
		return "true or false", "tf"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a whole number", "0"
	case reflect.Float32, reflect.Float64:
		return "a number", "0"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string", `"`
		}
		return "an array", "["
	case reflect.Map, reflect.Struct:
		return "an object", "{"
	}
	return "another kind of value", ""
}

// kind names a JSON kind as a sentence does.
func kind(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't':
		return "true"
	case 'f':
		return "false"
	case 'n':
		return "null"
	}
	return "something else"
}

func lastToken(p jsontext.Pointer) string {
	s := string(p)
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}
