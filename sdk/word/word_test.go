package word

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type p struct {
	Name string `json:"name"`
}

type o struct {
	Greeting string `json:"greeting"`
}

func greet(in p) (o, error) {
	switch in.Name {
	case "":
		return o{}, Fail("hello.no_name", "nobody to greet").With("hint", "name")
	case "plain":
		return o{}, errors.New("something broke")
	}
	return o{Greeting: "hi " + in.Name}, nil
}

func TestRun(t *testing.T) {
	cases := []struct {
		in, out string
		status  int
	}{
		{`{"name": "node"}`, `{"greeting":"hi node"}`, 0},
		{`{"name": ""}`, `{"error":{"code":"hello.no_name","message":"nobody to greet","details":{"hint":"name"}}}`, 1},
		{`{"name": "plain"}`, `{"error":{"code":"word.failed","message":"something broke"}}`, 1},
		{`{"name": "x", "extra": 1}`, `"code":"word.param_invalid"`, 1},
		{`[1]`, `"code":"word.param_invalid"`, 1},
	}
	for _, tc := range cases {
		var out bytes.Buffer
		status := run(strings.NewReader(tc.in), &out, greet)
		if status != tc.status || !strings.Contains(out.String(), tc.out) {
			t.Errorf("%s: status %d, out %s", tc.in, status, out.String())
		}
	}
}

func TestCallOutsideTheHost(t *testing.T) {
	if _, err := Sys().Facts(); !errors.Is(err, ErrNoHost) {
		t.Fatalf("err = %v", err)
	}
	if IsUnknown(errcode.New(errcode.CapabilityDenied, "x")) || !IsDenied(errcode.New(errcode.CapabilityDenied, "x")) {
		t.Fatal("IsUnknown/IsDenied confuse codes")
	}
}
