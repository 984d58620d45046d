// Package strictjson decodes outside JSON the strict way: capped, one value, no unknown or repeated keys.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
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
// repeated keys, and fields v does not declare.
func Decode(data []byte, limit int, v any) error {
	if len(data) > limit {
		return ErrTooLarge
	}
	if err := CheckKeys(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		const prefix = "json: unknown field "
		if msg := err.Error(); strings.HasPrefix(msg, prefix) {
			return &UnknownFieldError{Field: strings.Trim(strings.TrimPrefix(msg, prefix), `"`)}
		}
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// CheckKeys reports the first repeated key in any object of data, and malformed JSON.
func CheckKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walk(dec); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

func walk(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]struct{}{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key := k.(string)
			if _, dup := seen[key]; dup {
				return &DuplicateKeyError{Key: key}
			}
			seen[key] = struct{}{}
			if err := walk(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		for dec.More() {
			if err := walk(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	return nil
}
