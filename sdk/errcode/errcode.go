// Package errcode gives every Lexicon error a stable code of the form area.reason and one wire envelope.
//
// A code is what callers branch on and what operators search for; the message is for people and may
// change. On the wire an error travels as
//
//	{"error": {"code": "statement.rollback", "message": "...", "details": {...}}}
//
// Every code is a constant in its area's file (codes_<area>.go) together with its Spec: the HTTP status
// the plane answers with and whether the request changed anything. Lookup, Status and Reserved read that
// table, so the plane's statuses and the areas a word may not report as its own come from one place:
//
//	errcode.Status(errcode.JobNotFound)       // 404
//	errcode.Reserved("store.busy")            // true: only Lexicon reports store.*
//	errcode.Reserved("restart_unit.failed")   // false: a word's own area
//
// Detail keys are constants too (DetailNodeID, DetailField...). The package is pure standard library so
// that words (GOOS=wasip1), drivers and the agent share it; sdk/RATIONALE.md says why the table looks so.
package errcode

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Error is an error with a code. The cause (Err) stays on this side of the wire.
type Error struct {
	Code    string
	Message string
	Details map[string]any
	Err     error
}

// New returns an error with code and a formatted message.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an error with code that keeps err as its cause.
func Wrap(err error, code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// With records one detail and returns e, so details chain at the point of creation.
func (e *Error) With(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Code)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Code returns the code of the outermost coded error in err's chain, or "" if there is none.
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Has reports whether err carries code anywhere in its chain.
func Has(err error, code string) bool {
	for err != nil {
		if e, ok := err.(*Error); ok && e.Code == code {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				if Has(inner, code) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// From returns err as an *Error. An error without a code becomes fallback, with its text as message.
func From(err error, fallback string) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: fallback, Message: err.Error(), Err: err}
}

// Body is the inside of the wire envelope.
type Body struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Envelope is the one JSON shape every Lexicon API uses for an error.
type Envelope struct {
	Error Body `json:"error"`
}

// Envelope returns e as it travels on the wire. The cause is left out on purpose: it may hold paths or
// values that belong to this side only.
func (e *Error) Envelope() Envelope {
	return Envelope{Error: Body{Code: e.Code, Message: e.Message, Details: e.Details}}
}

// MarshalJSON encodes e as its envelope.
func (e *Error) MarshalJSON() ([]byte, error) { return json.Marshal(e.Envelope()) }

// Parse reads an envelope. It returns nil when data holds no coded error.
func Parse(data []byte) *Error {
	var env Envelope
	if json.Unmarshal(data, &env) != nil || env.Error.Code == "" {
		return nil
	}
	return &Error{Code: env.Error.Code, Message: env.Error.Message, Details: env.Error.Details}
}
