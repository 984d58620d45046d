// Package word is what a word's author writes against: typed params in, a typed result out, and typed
// calls to the capabilities the word's manifest declares. A word is a Go program built with
// GOOS=wasip1 GOARCH=wasm and run by the Lexicon host in a fresh sandbox for every call.
//
//	type Params struct{ Unit string `json:"unit"` }
//	type Output struct{ State string `json:"state"` }
//
//	func main() {
//		word.Run(func(p Params) (Output, error) {
//			u, err := word.Systemd().Unit(p.Unit)
//			if word.IsUnknown(err) {
//				return Output{State: "unknown"}, nil // no systemd here: say so, never guess
//			}
//			if err != nil {
//				return Output{}, err
//			}
//			return Output{State: u.ActiveState}, nil
//		})
//	}
//
// Params arrive as JSON on stdin (the host has already checked them against the manifest's schema), the
// result leaves as JSON on stdout (the host checks it against the output schema), and Log writes the
// transcript on stderr. A word fails with a reason by returning an error made by Fail, whose code is
// the word's own ("disk_usage.root_missing"); a capability error passed through keeps its code
// (capability.denied, capability.unknown, ...). A recipe's check is written the same way, with Check
// in place of Run, answering a Verdict (recipe.go). The package sdk/word/wordtest runs a built word or
// recipe through the real host in ordinary `go test`.
package word

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// maxParams caps what Run reads from stdin.
const maxParams = 8 << 20

// Run decodes the params into P, calls fn, writes its result and exits: status 0 with the result, or
// status 1 with the error envelope. It never returns. A panic in fn is left to crash the word, which
// the host reports as word.crashed.
func Run[P, O any](fn func(P) (O, error)) {
	os.Exit(run(os.Stdin, os.Stdout, fn))
}

func run[P, O any](in io.Reader, out io.Writer, fn func(P) (O, error)) int {
	var p P
	data, err := io.ReadAll(io.LimitReader(in, maxParams))
	if err == nil {
		err = decodeParams(data, &p)
	}
	if err != nil {
		return fail(out, errcode.Wrap(err, errcode.WordParamInvalid, "params do not decode into %T: %v", p, err))
	}
	result, err := fn(p)
	if err != nil {
		return fail(out, err)
	}
	b, err := encodeResult(result)
	if err != nil {
		return fail(out, errcode.Wrap(err, errcode.WordOutputInvalid, "result does not encode: %v", err))
	}
	if _, err := out.Write(b); err != nil {
		return 1
	}
	return 0
}

// encoding/json's first use in a fresh instance (its encoders and field tables for each type, built by
// reflection) costs a word's start more than the rest of the SDK together. A word called with no
// params or answering no fields needs none of it: the two cases below give what encoding/json would,
// without it.

// decodeParams decodes params data into *p, strictly; no data at all leaves *p zero.
func decodeParams[P any](data []byte, p *P) error {
	if len(data) == 0 || (emptyObject(data) && zeroDecodes(p)) {
		return nil
	}
	return decodeStrict(data, p)
}

// emptyObject reports whether data is the JSON object {} alone, between JSON blanks.
func emptyObject(data []byte) bool {
	return string(bytes.Trim(data, " \t\r\n")) == "{}"
}

// zeroDecodes reports whether decoding {} into *p leaves it as it is: p points to a struct whose
// decoding is encoding/json's own (no UnmarshalJSON or UnmarshalText, which could answer otherwise).
func zeroDecodes[P any](p *P) bool {
	switch any(p).(type) {
	case json.Unmarshaler, encoding.TextUnmarshaler:
		return false
	}
	return reflect.TypeFor[P]().Kind() == reflect.Struct
}

// encodeResult is json.Marshal(result), answering {} at once for a struct with no fields whose
// encoding is encoding/json's own.
func encodeResult(result any) ([]byte, error) {
	switch result.(type) {
	case json.Marshaler, encoding.TextMarshaler:
	default:
		if t := reflect.TypeOf(result); t != nil && t.Kind() == reflect.Struct && t.NumField() == 0 {
			return []byte("{}"), nil
		}
	}
	return json.Marshal(result)
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func fail(out io.Writer, err error) int {
	e := errcode.From(err, errcode.WordFailed)
	var withOut *failedWith
	if errors.As(err, &withOut) {
		if o, merr := json.Marshal(withOut.output); merr == nil {
			b, _ := json.Marshal(struct {
				Error  errcode.Body    `json:"error"`
				Output json.RawMessage `json:"output"`
			}{e.Envelope().Error, o})
			out.Write(b)
			return 1
		}
	}
	b, _ := json.Marshal(e.Envelope())
	out.Write(b)
	return 1
}

// FailWithOutput makes Run fail with err (its code and message, as Fail's) and still report output:
// what a word that changes several things did before it failed, item by item. The host keeps the
// output when it satisfies the word's output schema, so the job ends failed and its report is not lost.
func FailWithOutput(err error, output any) error { return &failedWith{err: err, output: output} }

type failedWith struct {
	err    error
	output any
}

func (f *failedWith) Error() string { return f.err.Error() }
func (f *failedWith) Unwrap() error { return f.err }

// Fail returns an error that makes Run fail with code (the word's own, "area.reason") and a message.
// Add details with its With method.
func Fail(code, format string, args ...any) *errcode.Error {
	return errcode.New(code, format, args...)
}

// Log writes one line to the transcript (stderr), which the host keeps up to the word's cap. Do not
// log secrets: the transcript leaves the machine.
func Log(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// IsUnknown reports whether err says this machine cannot answer (capability.unknown).
func IsUnknown(err error) bool { return errcode.Has(err, errcode.CapabilityUnknown) }

// IsDenied reports whether err is a refusal by the host (capability.denied).
func IsDenied(err error) bool { return errcode.Has(err, errcode.CapabilityDenied) }

// IsNotFound reports whether the path, unit or program asked for does not exist.
func IsNotFound(err error) bool { return errcode.Has(err, errcode.CapabilityNotFound) }

// Code returns err's code, or "" when it has none.
func Code(err error) string { return errcode.Code(err) }

// ErrNoHost is what capability calls return outside the Lexicon host (in a plain `go test`).
var ErrNoHost = errors.New("not running inside the Lexicon host")
