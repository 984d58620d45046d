package strictjson_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/internal/strictjson"
)

type target struct {
	Name  string `json:"name"`
	Inner struct {
		N int `json:"n"`
	} `json:"inner"`
}

func TestDecode(t *testing.T) {
	var v target
	if err := strictjson.Decode([]byte(`{"name":"a","inner":{"n":1}}`), 100, &v); err != nil || v.Inner.N != 1 {
		t.Fatalf("good input: %v %+v", err, v)
	}
	var unknown *strictjson.UnknownFieldError
	if err := strictjson.Decode([]byte(`{"name":"a","inner":{"n":1,"evil":2}}`), 100, &v); !errors.As(err, &unknown) || unknown.Field != "evil" {
		t.Fatalf("unknown nested field: %v", err)
	}
	var dup *strictjson.DuplicateKeyError
	if err := strictjson.Decode([]byte(`{"name":"a","name":"b"}`), 100, &v); !errors.As(err, &dup) || dup.Key != "name" {
		t.Fatalf("repeated key: %v", err)
	}
	if err := strictjson.Decode([]byte(`{"Name":"a"}`), 100, &v); !errors.As(err, &unknown) {
		t.Fatalf("case-folded name accepted: %v", err)
	}
	if err := strictjson.Decode([]byte(`{"name":"a"} {}`), 100, &v); err == nil {
		t.Fatal("trailing value accepted")
	}
	if err := strictjson.Decode([]byte(`{"name":"a"}`), 5, &v); !errors.Is(err, strictjson.ErrTooLarge) {
		t.Fatalf("cap: %v", err)
	}
}

// TestRefusalsInJSONWords: a value of the wrong kind, or one that does not fit, is told in JSON's
// words, never with the Go type it was decoded into.
func TestRefusalsInJSONWords(t *testing.T) {
	type shape struct {
		S  string         `json:"s"`
		N  int8           `json:"n"`
		L  []string       `json:"l"`
		M  map[string]int `json:"m"`
		At time.Time      `json:"at"`
		In struct {
			B bool `json:"b"`
		} `json:"in"`
		C picky `json:"c"`
	}
	for in, want := range map[string]string{
		`{"s": 5}`:            "/s must be a string, not a number",
		`{"n": 500}`:          "/n must be a whole number: 500 is out of range",
		`{"n": 1.5}`:          "/n must be a whole number: 1.5 is not one",
		`{"l": {}}`:           "/l must be an array, not an object",
		`{"l": ["a", 3]}`:     "/l/1 must be a string, not a number",
		`{"m": [1]}`:          "/m must be an object, not an array",
		`{"at": "yesterday"}`: "/at must be a time in RFC 3339: the string is not one (2025-01-31T12:00:00Z is)",
		`{"at": 5}`:           "/at must be a time in RFC 3339, not a number",
		`{"in": {"b": "y"}}`:  "/in/b must be true or false, not a string",
		`[1, 2]`:              "the document must be an object, not an array",
		`{"s": "a",}`:         "not valid JSON: ",
		`{"s": "a"`:           "not valid JSON: ",
	} {
		var v shape
		err := strictjson.Decode([]byte(in), 1000, &v)
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "json:") {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

// picky decodes with its own decoder, which says what it takes.
type picky struct{}

func (*picky) UnmarshalJSON(b []byte) error {
	if string(b) != `"yes"` {
		return errors.New("picky takes only yes")
	}
	return nil
}

func TestDecodeOpen(t *testing.T) {
	var v target
	if err := strictjson.DecodeOpen([]byte(`{"name":"a","extra":[1,{"x":2}],"inner":{"n":1,"more":true}}`), 100, &v); err != nil || v.Name != "a" || v.Inner.N != 1 {
		t.Fatalf("unknown members not skipped: %v %+v", err, v)
	}
	var dup *strictjson.DuplicateKeyError
	if err := strictjson.DecodeOpen([]byte(`{"name":"a","extra":1,"extra":2}`), 100, &v); !errors.As(err, &dup) || dup.Key != "extra" {
		t.Fatalf("repeated unknown key: %v", err)
	}
	if err := strictjson.DecodeOpen([]byte(`{"name":"a"} {}`), 100, &v); err == nil {
		t.Fatal("trailing value accepted")
	}
	if err := strictjson.DecodeOpen([]byte(`{"name":"a"}`), 5, &v); !errors.Is(err, strictjson.ErrTooLarge) {
		t.Fatalf("cap: %v", err)
	}
}

// TestDecodeOpenInWords: DecodeOpen tells what it refuses in JSON's words too.
func TestDecodeOpenInWords(t *testing.T) {
	var v target
	if err := strictjson.DecodeOpen([]byte(`{"name": 5, "extra": 1}`), 100, &v); err == nil || err.Error() != "/name must be a string, not a number" {
		t.Fatalf("a number for a string: %v", err)
	}
}
