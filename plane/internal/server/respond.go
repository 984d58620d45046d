package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/internal/audit"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// status is the HTTP status of code, from the codes table. The code is what clients branch on; the
// status is for proxies and people reading logs. A code the table does not declare answers 500.
func status(code string) int { return errcode.Status(code) }

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
	audit.NoteCode(r.Context(), e.Code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status(e.Code))
	_ = json.NewEncoder(w).Encode(e.Envelope())
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeBytes answers 200 with data as contentType: an artifact, served as stored.
func writeBytes(w http.ResponseWriter, contentType string, data []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// readBody reads at most limit bytes; more is request.too_large.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, errcode.Wrap(err, errcode.RequestMalformed, "cannot read the request body")
	}
	if int64(len(body)) > limit {
		return nil, errcode.New(errcode.RequestTooLarge, "body is over the %d-byte cap of this route", limit).With(errcode.DetailCap, limit)
	}
	return body, nil
}

// readJSON reads an admin request a body of at most limit bytes and decodes it strictly into v.
func readJSON(r *http.Request, limit int64, v any) error {
	body, err := readBody(r, limit)
	if err != nil {
		return err
	}
	return decodeStrict(body, v)
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
