package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// status maps a code to its HTTP status. The code is what clients branch on; the status is for
// proxies and people reading logs.
func status(code string) int {
	area, reason, _ := strings.Cut(code, ".")
	switch {
	case code == errcode.InternalError, code == errcode.AccountKeyMismatch, code == errcode.AccountSealBroken:
		return http.StatusInternalServerError
	case code == errcode.DriverCrashed, code == errcode.DriverStartFailed, code == errcode.DriverInternal:
		return http.StatusBadGateway
	case code == errcode.DriverTimeout:
		return http.StatusGatewayTimeout
	case code == errcode.DriverUnavailable:
		return http.StatusServiceUnavailable
	case area == "store" && (reason == "unavailable" || reason == "busy" || reason == "closed"), code == errcode.ChannelBusy:
		return http.StatusServiceUnavailable
	case code == errcode.RequestRateLimited:
		return http.StatusTooManyRequests
	case code == errcode.RequestTooLarge:
		return http.StatusRequestEntityTooLarge
	case code == errcode.AuthRequired, area == "channel" && reason != "digest_mismatch" && reason != "busy":
		return http.StatusUnauthorized
	case code == errcode.AuthForbidden, code == errcode.NodeNotActive:
		return http.StatusForbidden
	case strings.HasSuffix(reason, "not_found"):
		return http.StatusNotFound
	case reason == "param_invalid", reason == "word_unavailable", area == "statement", area == "module", area == "key":
		return http.StatusUnprocessableEntity
	case reason == "rollback", reason == "fingerprint_mismatch", strings.HasPrefix(reason, "not_"), reason == "finished",
		reason == "exists", reason == "name_taken", reason == "key_retired", reason == "key_enrolled", reason == "expired",
		reason == "too_many", code == errcode.DriverDisabled:
		return http.StatusConflict
	}
	return http.StatusBadRequest
}

// writeError answers with the error envelope. Errors without a code are the plane's own failures:
// their text goes to the log, not to the client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *errcode.Error
	if !errors.As(err, &e) {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		e = errcode.New(errcode.InternalError, "the plane failed; its log has the cause")
	} else if status(e.Code) >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "code", e.Code, "err", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status(e.Code))
	_ = json.NewEncoder(w).Encode(e.Envelope())
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// readBody reads at most limit bytes; more is request.too_large.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, errcode.Wrap(err, errcode.RequestMalformed, "cannot read the request body")
	}
	if int64(len(body)) > limit {
		return nil, errcode.New(errcode.RequestTooLarge, "body is over the %d-byte cap of this route", limit).With("cap", limit)
	}
	return body, nil
}

// decodeStrict decodes an admin request body, refusing unknown fields.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errcode.Wrap(err, errcode.RequestMalformed, "body is not the JSON this route takes")
	}
	return nil
}

// decodeLenient decodes an agent body, setting unknown fields aside so newer agents keep working.
func decodeLenient(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return errcode.Wrap(err, errcode.RequestMalformed, "body is not the JSON this route takes")
	}
	return nil
}
