package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func TestStatusOfCodes(t *testing.T) {
	cases := map[string]int{
		errcode.ChannelReplayed:         http.StatusUnauthorized,
		errcode.ChannelClockSkew:        http.StatusUnauthorized,
		errcode.ChannelDigestMismatch:   http.StatusBadRequest,
		errcode.ChannelBusy:             http.StatusServiceUnavailable,
		errcode.AuthRequired:            http.StatusUnauthorized,
		errcode.AuthForbidden:           http.StatusForbidden,
		errcode.NodeNotActive:           http.StatusForbidden,
		errcode.JobNotFound:             http.StatusNotFound,
		errcode.JobWordUnavailable:      http.StatusUnprocessableEntity,
		errcode.WordParamInvalid:        http.StatusUnprocessableEntity,
		errcode.JoinFingerprintMismatch: http.StatusConflict,
		errcode.ReleaseRollback:         http.StatusConflict,
		errcode.JobNotRunning:           http.StatusConflict,
		errcode.RequestTooLarge:         http.StatusRequestEntityTooLarge,
		errcode.RequestRateLimited:      http.StatusTooManyRequests,
		errcode.StoreUnavailable:        http.StatusServiceUnavailable,
		errcode.InternalError:           http.StatusInternalServerError,
		errcode.StatementRollback:       http.StatusUnprocessableEntity,
	}
	for code, want := range cases {
		if got := status(code); got != want {
			t.Errorf("status(%s) = %d, want %d", code, got, want)
		}
	}
}

func TestLimiterPerKey(t *testing.T) {
	l := newLimiter(1, 2)
	now := time.Unix(1000, 0)
	for i := range 2 {
		if err := l.allow("a", now); err != nil {
			t.Fatalf("burst request %d refused: %v", i, err)
		}
	}
	err := l.allow("a", now)
	if errcode.Code(err) != errcode.RequestRateLimited {
		t.Fatalf("over the burst: %v", err)
	}
	// Another key has its own bucket; a refused request took no token.
	if err := l.allow("b", now); err != nil {
		t.Fatalf("other key: %v", err)
	}
	if err := l.allow("a", now.Add(time.Second)); err != nil {
		t.Fatalf("after a second: %v", err)
	}
}
