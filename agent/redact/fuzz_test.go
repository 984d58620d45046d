package redact

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"unicode/utf8"
)

// shape lists a JSON document's tokens with every string value replaced by a placeholder: two
// documents with the same shape differ only in the text of their string values.
func shape(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []string
	type level struct{ obj, key bool }
	var stack []level
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		isKey := len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].key
		switch v := tok.(type) {
		case json.Delim:
			out = append(out, v.String())
			switch v {
			case '{', '[':
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].key = true
				}
				stack = append(stack, level{obj: v == '{', key: true})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if isKey {
				out = append(out, "key:"+v)
			} else {
				out = append(out, "string")
			}
		default:
			b, _ := json.Marshal(v)
			out = append(out, string(b))
		}
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].key = !isKey
		}
	}
	return out
}

// FuzzJSON: for any valid JSON the output is valid JSON of the same shape (keys, numbers, literals
// and nesting unchanged), and redacting it again changes nothing and counts nothing.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{
		`{"password":"x","host":"10.0.0.1","mail":"a@b.example","list":["sha256:` + hex64 + `",1,true,null]}`,
		`{"credentials":{"user":"u","n":[1,2,{"k":"v"}]},"digest":"` + hex64 + `"}`,
		`["https://u:p@h/x", "Authorization: Bearer abc", "` + jwt + `", "` + awsKey + `"]`,
		`"plain"`, `12.5e3`, `{"a":{"b":{"c":[[],{}]}}}`, `{"\u00e9\ud83d\ude00":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			if _, _, err := JSON(in); err == nil {
				t.Fatal("invalid JSON accepted")
			}
			return
		}
		out, _, err := JSON(in)
		if err != nil {
			t.Fatalf("valid JSON refused: %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("output is not valid JSON:\n in %q\nout %q", in, out)
		}
		if a, b := shape(t, in), shape(t, out); !slices.Equal(a, b) {
			t.Fatalf("shape changed:\n in %q\nout %q", in, out)
		}
		again, c, err := JSON(out)
		if err != nil || !bytes.Equal(again, out) || c.Total() != 0 {
			t.Fatalf("not idempotent:\n in %q\nout %q\nagain %q (%v)", in, out, again, c)
		}
	})
}

// FuzzText: redacting text is idempotent and keeps valid UTF-8 valid.
func FuzzText(f *testing.F) {
	for _, s := range []string{
		"password=hunter2 user=bob alice@example.com 10.0.0.1:80 [fe80::1%eth0]:22 " + hex64,
		"Authorization: Bearer " + jwt + "\nCookie: a=b",
		"https://u:p@h.example/x?token=abc&y=1 sha256:" + hex64,
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
		"/var/lib/docker/overlay2/" + hex64 + "/diff " + awsKey,
		"Depends: libpam0g (>= 0.99.7.1) getty@tty1.service",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, _ := Text(in)
		again, c := Text(out)
		if again != out || c.Total() != 0 {
			t.Fatalf("not idempotent:\n   in %q\n  out %q\nagain %q (%v)", in, out, again, c)
		}
		if utf8.ValidString(in) && !utf8.ValidString(out) {
			t.Fatalf("valid UTF-8 became invalid: %q -> %q", in, out)
		}
	})
}
