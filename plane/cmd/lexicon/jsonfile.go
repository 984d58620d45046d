package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// readJSONFile reads the file at path, one JSON value, into v, refusing fields v does not have. What
// it refuses is told in JSON's words, with where in the file, never with the Go type v is.
func readJSONFile(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot read %s", path)
	}
	if problem := decodeJSON(data, v); problem != "" {
		return cli.UsageError("%s: %s", path, problem)
	}
	return nil
}

// decodeJSON decodes data, one JSON value, into v, and says what is wrong with it ("" when nothing).
func decodeJSON(data []byte, v any) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonProblem("the file", data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return "it holds more than one JSON value"
	}
	return ""
}

// jsonProblem says what is wrong with data, which encoding/json refused with err; whole names the
// document ("the file").
func jsonProblem(whole string, data []byte, err error) string {
	var typ *json.UnmarshalTypeError
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &typ):
		where := whole
		if typ.Field != "" {
			where = typ.Field
		}
		return fmt.Sprintf("%s must be %s, not %s", where, takes(typ.Type), article(typ.Value))
	case errors.As(err, &syn):
		line, col := position(data, syn.Offset)
		return fmt.Sprintf("not valid JSON at line %d, column %d: %s", line, col, syn.Error())
	case errors.Is(err, io.EOF):
		return "it holds no JSON value"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "not valid JSON: it ends before its value does"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// takes names in JSON's words the values a Go type decodes from.
func takes(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}

// article puts "a" or "an" before encoding/json's name of a value's kind ("array", "number 1e400").
func article(kind string) string {
	if kind == "bool" {
		return "true or false"
	}
	if strings.HasPrefix(kind, "a") || strings.HasPrefix(kind, "o") {
		return "an " + kind
	}
	return "a " + kind
}

// position is the 1-based line and column of the byte at offset.
func position(data []byte, offset int64) (int, int) {
	offset = min(max(offset, 1), int64(len(data)))
	before := data[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	return line, int(offset) - bytes.LastIndexByte(before, '\n') - 1
}
