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

type setsOnDecode struct{ Set bool }

func (s *setsOnDecode) UnmarshalJSON([]byte) error { s.Set = true; return nil }

type textual struct{ V string }

func (t *textual) UnmarshalText([]byte) error { return nil }

type namedEmpty struct{}

type marshalsItself struct{}

func (marshalsItself) MarshalJSON() ([]byte, error) { return []byte(`"itself"`), nil }

type marshalsText struct{}

func (marshalsText) MarshalText() ([]byte, error) { return []byte("text"), nil }

// sameDecode fails t unless run's decoding of data into P is encoding/json's.
func sameDecode[P any](t *testing.T, data []byte) {
	t.Helper()
	if len(data) == 0 {
		return // no params at all: run leaves P zero and asks nothing of encoding/json
	}
	var got P
	gotErr := decodeParams(data, &got)
	var want P
	wantErr := decodeStrict(data, &want)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%T from %q: error %v, encoding/json's %v", want, data, gotErr, wantErr)
	}
	if gotErr == nil {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if !bytes.Equal(g, w) {
			t.Fatalf("%T from %q: %s, encoding/json's %s", want, data, g, w)
		}
	}
}

// TestEmptyParamsAndResultsAsEncodingJSON: the params {} and a result with no fields, answered without
// encoding/json, come out as encoding/json would make them, for types that decode or encode themselves too.
func TestEmptyParamsAndResultsAsEncodingJSON(t *testing.T) {
	for _, data := range []string{`{}`, " {}\n", `{ }`, "\v{}", `{}{}`, `{"name":"x"}`, `[]`} {
		sameDecode[struct{}](t, []byte(data))
		sameDecode[p](t, []byte(data))
		sameDecode[setsOnDecode](t, []byte(data))
		sameDecode[textual](t, []byte(data))
		sameDecode[map[string]int](t, []byte(data))
		sameDecode[*p](t, []byte(data))
	}
	var s setsOnDecode
	if err := decodeParams([]byte(`{}`), &s); err != nil || !s.Set {
		t.Fatal("a type with its own UnmarshalJSON was not asked to decode {}")
	}
	for _, v := range []any{struct{}{}, namedEmpty{}, marshalsItself{}, marshalsText{}, o{Greeting: "hi"}, &namedEmpty{}, nil} {
		got, gotErr := encodeResult(v)
		want, wantErr := json.Marshal(v)
		if !bytes.Equal(got, want) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%T: %s (%v), encoding/json's %s (%v)", v, got, gotErr, want, wantErr)
		}
	}
}

// FuzzParams: whatever params arrive, run decodes them as encoding/json does.
func FuzzParams(f *testing.F) {
	for _, s := range []string{`{}`, ` {} `, `{"name":"x"}`, "\v{}", `{}x`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameDecode[struct{}](t, data)
		sameDecode[p](t, data)
		sameDecode[setsOnDecode](t, data)
	})
}
