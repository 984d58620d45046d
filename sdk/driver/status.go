package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverpb "github.com/lexicon-fleet/lexicon/sdk/driver/proto"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TransportError is a gRPC failure that did not come from the driver's own code: the connection broke,
// the process went away, the deadline passed, or the method is not served. The host tells a crash from
// a driver's answer by it.
type TransportError struct {
	Code    codes.Code
	Message string
}

func (e *TransportError) Error() string { return fmt.Sprintf("rpc %s: %s", e.Code, e.Message) }

// IsTransport reports whether err is (or wraps) a TransportError.
func IsTransport(err error) bool {
	var te *TransportError
	return errors.As(err, &te)
}

// ToStatus turns a driver's error into a gRPC status error that carries its code, message and
// details, with every secret scrub knows replaced. An error without a code travels as driver.internal,
// a context error as driver.timeout or driver.unavailable.
func ToStatus(err error, scrub *Scrubber) error {
	if err == nil {
		return nil
	}
	var e *errcode.Error
	switch {
	case errors.As(err, &e):
	case errors.Is(err, context.DeadlineExceeded):
		e = errcode.New(errcode.DriverTimeout, "%s", err.Error())
	case errors.Is(err, context.Canceled):
		e = errcode.New(errcode.DriverUnavailable, "call canceled: %s", err.Error())
	default:
		e = errcode.New(errcode.DriverInternal, "%s", err.Error())
	}
	msg := scrub.Scrub(e.Message)
	detail := &driverpb.Error{Code: e.Code, Message: msg}
	if len(e.Details) > 0 {
		if b, jerr := json.Marshal(e.Details); jerr == nil {
			detail.DetailsJson = []byte(scrub.Scrub(string(b)))
		}
	}
	st := status.New(grpcCode(e.Code), e.Code+": "+msg)
	if withDetail, derr := st.WithDetails(detail); derr == nil {
		st = withDetail
	}
	return st.Err()
}

// FromStatus turns an error from a gRPC call back into the coded error the driver returned. A status
// without Lexicon's detail becomes driver.timeout, driver.unavailable or driver.internal wrapping a
// TransportError.
func FromStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		if errcode.Code(err) != "" {
			return err
		}
		return errcode.Wrap(err, errcode.DriverInternal, "driver call failed")
	}
	for _, d := range st.Details() {
		if pe, ok := d.(*driverpb.Error); ok && pe.Code != "" {
			e := &errcode.Error{Code: pe.Code, Message: pe.Message}
			if len(pe.DetailsJson) > 0 {
				var details map[string]any
				if json.Unmarshal(pe.DetailsJson, &details) == nil {
					e.Details = details
				}
			}
			return e
		}
	}
	te := &TransportError{Code: st.Code(), Message: st.Message()}
	switch st.Code() {
	case codes.DeadlineExceeded:
		return errcode.Wrap(te, errcode.DriverTimeout, "driver call timed out")
	case codes.Canceled, codes.Unavailable:
		return errcode.Wrap(te, errcode.DriverUnavailable, "driver is not reachable")
	}
	return errcode.Wrap(te, errcode.DriverInternal, "driver call failed")
}

// grpcCode picks the gRPC status code that fits a Lexicon code's reason, so that generic gRPC tooling
// reads the failure sensibly; the Lexicon code itself travels in the detail.
func grpcCode(code string) codes.Code {
	reason := code[strings.LastIndexByte(code, '.')+1:]
	switch reason {
	case "not_found":
		return codes.NotFound
	case "invalid", "config_invalid":
		return codes.InvalidArgument
	case "auth":
		return codes.PermissionDenied
	case "quota", "rate_limited":
		return codes.ResourceExhausted
	case "unsupported":
		return codes.Unimplemented
	case "conflict", "not_configured":
		return codes.FailedPrecondition
	case "unavailable":
		return codes.Unavailable
	case "timeout":
		return codes.DeadlineExceeded
	}
	return codes.Unknown
}
