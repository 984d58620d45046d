package word

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

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

type decl struct {
	Units []string `json:"units"`
}

func TestCheck(t *testing.T) {
	fn := func(d decl) (Verdict, error) {
		switch {
		case len(d.Units) == 0:
			return Pass("nothing declared"), nil
		case d.Units[0] == "unknown":
			return Verdict{}, errcode.New(errcode.CapabilityUnknown, "no systemd on this machine")
		case d.Units[0] == "broken":
			return Verdict{}, errors.New("the check broke")
		case d.Units[0] == "bad":
			return Verdict{Verdict: "maybe"}, nil
		case d.Units[0] == "passrepair":
			return Pass("ok").WithRepair(map[string]string{"unit": "x"}), nil
		case d.Units[0] == "long":
			return Failing("%s", strings.Repeat("é", MaxDetail)), nil
		}
		return Failing("%s is failed", d.Units[0]).WithRepair(map[string]string{"unit": d.Units[0]}), nil
	}
	cases := []struct {
		in, out string
		status  int
	}{
		{`{}`, `{"verdict":"pass","detail":"nothing declared"}`, 0},
		{`{"units": ["nginx.service"]}`, `{"verdict":"fail","detail":"nginx.service is failed","repair":{"unit":"nginx.service"}}`, 0},
		{`{"units": ["unknown"]}`, `{"verdict":"unknown","detail":"no systemd on this machine"}`, 0},
		{`{"units": ["broken"]}`, `{"error":{"code":"word.failed","message":"the check broke"}}`, 1},
		{`{"units": ["bad"]}`, `"code":"recipe.no_verdict"`, 1},
		{`{"units": ["passrepair"]}`, `"code":"recipe.no_verdict"`, 1},
		{`{"units": [1]}`, `"code":"word.param_invalid"`, 1},
	}
	for _, tc := range cases {
		var out bytes.Buffer
		status := check(strings.NewReader(tc.in), &out, fn)
		if status != tc.status || !strings.Contains(out.String(), tc.out) {
			t.Errorf("%s: status %d, out %s", tc.in, status, out.String())
		}
	}
	var out bytes.Buffer
	if check(strings.NewReader(`{"units": ["long"]}`), &out, fn) != 0 {
		t.Fatal(out.String())
	}
	var v struct{ Detail string }
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || len(v.Detail) > MaxDetail || !utf8.ValidString(v.Detail) {
		t.Fatalf("detail of %d bytes, valid %v: %v", len(v.Detail), utf8.ValidString(v.Detail), err)
	}
}
