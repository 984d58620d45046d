package errcode_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func TestCodeThroughWrapping(t *testing.T) {
	base := errcode.New(errcode.StatementRollback, "sequence %d below %d", 3, 7).With("sequence", 3)
	wrapped := fmt.Errorf("verify: %w", base)
	if got := errcode.Code(wrapped); got != errcode.StatementRollback {
		t.Fatalf("Code = %q", got)
	}
	if !errcode.Has(errors.Join(errors.New("x"), wrapped), errcode.StatementRollback) {
		t.Fatal("Has did not see the code through Join")
	}
	if errcode.Code(errors.New("plain")) != "" {
		t.Fatal("plain error has a code")
	}
}

func TestEnvelopeLeavesCauseOut(t *testing.T) {
	err := errcode.Wrap(errors.New("/secret/path"), errcode.IOFailed, "cannot read trust state")
	b, _ := json.Marshal(err)
	want := `{"error":{"code":"io.failed","message":"cannot read trust state"}}`
	if string(b) != want {
		t.Fatalf("got %s want %s", b, want)
	}
	back := errcode.Parse(b)
	if back == nil || back.Code != errcode.IOFailed {
		t.Fatalf("Parse = %#v", back)
	}
	if errcode.Parse([]byte(`{"ok":true}`)) != nil {
		t.Fatal("Parse invented an error")
	}
}
