package word

import (
	"encoding/json"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

func errRequestTooLarge(n int) error {
	return errcode.New(errcode.CapabilityInvalid, "request of %d bytes is over the host's cap", n)
}

// Call sends one raw capability request (a JSON object with "cap") and decodes the result into result.
// The typed clients (FS, Sys, Systemd, ...) are built on it; use it only for what they lack.
func Call(req any, result any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return errcode.Wrap(err, errcode.CapabilityInvalid, "request does not encode")
	}
	resp, err := hostCall(b)
	if err != nil {
		return err
	}
	var r capv1.Response
	if err := json.Unmarshal(resp, &r); err != nil {
		return errcode.Wrap(err, errcode.CapabilityFailed, "host answered with something that is not a response")
	}
	if r.Error != nil {
		return &errcode.Error{Code: r.Error.Code, Message: r.Error.Message, Details: r.Error.Details}
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, result); err != nil {
		return errcode.Wrap(err, errcode.CapabilityFailed, "host answer does not decode into %T", result)
	}
	return nil
}
