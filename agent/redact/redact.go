// Package redact removes credentials, e-mail local parts, IP addresses and long opaque tokens from a
// word's output and transcript on the node, before they leave the machine.
//
//	out, counts, err := redact.JSON(output) // output already validated against the word's schema
//	transcript, more := redact.Text(transcript)
//	counts.Add(more)
//
// JSON walks the document and rewrites string values only: object keys, numbers, booleans, nulls,
// whitespace and the order of everything are kept byte for byte, so the structure is unchanged and the
// result is valid JSON. A string left alone keeps its exact original encoding. Redaction is idempotent:
// redacting a redacted document changes nothing and counts nothing.
//
// What is redacted, and what it becomes:
//
//   - The value of a credential-named key (password, passwd, secret, token, api_key, apikey,
//     private_key, authorization, credential(s), access_key, cookie, client_secret, session_id, ...;
//     see isCredentialKey), and every string nested under one: "[redacted:credential]". Numbers,
//     booleans and nulls under such keys are kept; an empty string stays empty.
//   - In every other string, and in transcript text:
//   - a PEM private key block: "[redacted:credential]";
//   - a URL's userinfo: https://user:pass@host becomes https://…@host;
//   - the value of a credential-named key=value or key: value pair: DB_PASSWORD=[redacted:credential],
//     Authorization: [redacted:credential] (header-like keys to the end of the line);
//   - an e-mail local part: alice@example.com becomes …@example.com (systemd unit names such as
//     getty@tty1.service are not addresses);
//   - an IPv4 or IPv6 address: "[redacted:ip]", except loopback, unspecified and netmasks;
//   - a long opaque token (see MinTokenLen and tokens.go): "[redacted:token]".
//
// A string under a key that promises a digest (digest, sha256, checksum, fingerprint, commit, ...;
// see isDigestKey) keeps its hex and base64 runs: a sha256 in image_digest is a hash, not a secret.
// Everywhere else a digest is kept only when labelled (sha256:<hex>) or when it is a component of an
// absolute path.
//
// Redacted output may no longer satisfy a format or pattern its schema declares (an "ipv4" field now
// holds a marker); the schema is checked before redaction, on the node.
package redact

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sync"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Kind is a kind of redacted value.
type Kind string

const (
	Credential Kind = "credential" // a credential-named value, a key=value secret, a private key block
	Email      Kind = "email"      // an e-mail local part
	IP         Kind = "ip"         // an IPv4 or IPv6 address
	Token      Kind = "token"      // a long opaque token, a JWT, a well-known token shape
	Userinfo   Kind = "userinfo"   // the user:password part of a URL
)

// Counts is how many values were redacted, by kind.
type Counts map[Kind]int

// Total is the number of values redacted.
func (c Counts) Total() int {
	n := 0
	for _, k := range c {
		n += k
	}
	return n
}

// Add adds o's counts to c.
func (c Counts) Add(o Counts) {
	for k, n := range o {
		c[k] += n
	}
}

// Text redacts free text (a transcript, a log line).
func Text(s string) (string, Counts) {
	c := Counts{}
	return redactText(s, textOpts{}, c), c
}

// JSON redacts a JSON document's string values. It refuses input that is not valid JSON with
// word.output_invalid; nothing is returned then.
func JSON(data []byte) ([]byte, Counts, error) {
	if !json.Valid(data) {
		return nil, nil, errcode.New(errcode.WordOutputInvalid, "output is not valid JSON; nothing was redacted or sent")
	}
	w := walker{src: data, c: Counts{}}
	w.out.Grow(len(data))
	w.walk()
	return w.out.Bytes(), w.c, nil
}

// scope is what enclosing keys say about a value.
type scope struct {
	cred   bool // under a credential-named key
	digest bool // under a digest-named key
}

type frame struct {
	obj       bool
	expectKey bool  // in an object, the next string is a key
	scope     scope // the container's own scope
	member    scope // in an object, the scope of the current member's value
}

// walker copies valid JSON through, token by token, rewriting string values. It relies on json.Valid
// having accepted the input.
type walker struct {
	src   []byte
	out   bytes.Buffer
	c     Counts
	stack []frame
}

// valueScope is the scope of a value at the current position.
func (w *walker) valueScope() scope {
	if len(w.stack) == 0 {
		return scope{}
	}
	top := &w.stack[len(w.stack)-1]
	if !top.obj {
		return top.scope
	}
	return top.member
}

func (w *walker) walk() {
	src := w.src
	for i := 0; i < len(src); {
		switch ch := src[i]; ch {
		case '{', '[':
			w.stack = append(w.stack, frame{obj: ch == '{', expectKey: ch == '{', scope: w.valueScope()})
			w.out.WriteByte(ch)
			i++
		case '}', ']':
			w.stack = w.stack[:len(w.stack)-1]
			w.out.WriteByte(ch)
			i++
		case ':':
			w.stack[len(w.stack)-1].expectKey = false
			w.out.WriteByte(ch)
			i++
		case ',':
			if top := &w.stack[len(w.stack)-1]; top.obj {
				top.expectKey = true
			}
			w.out.WriteByte(ch)
			i++
		case '"':
			end := stringEnd(src, i)
			w.str(src[i:end])
			i = end
		default: // whitespace, numbers, true, false, null
			w.out.WriteByte(ch)
			i++
		}
	}
}

// stringEnd returns the index just past the string literal starting at src[i].
func stringEnd(src []byte, i int) int {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(src)
}

func (w *walker) str(raw []byte) {
	var s string
	if bytes.IndexByte(raw, '\\') < 0 {
		s = string(raw[1 : len(raw)-1]) // nothing to unescape
	} else {
		_ = json.Unmarshal(raw, &s) // valid by json.Valid
	}
	if n := len(w.stack); n > 0 && w.stack[n-1].obj && w.stack[n-1].expectKey {
		top := &w.stack[n-1]
		top.member = scope{
			cred:   top.scope.cred || isCredentialKey(s),
			digest: top.scope.digest || isDigestKey(s),
		}
		w.out.Write(raw)
		return
	}
	sc := w.valueScope()
	red := s
	switch {
	case sc.cred:
		if s != "" && s != credentialMarker {
			red = credentialMarker
			w.c[Credential]++
		}
	default:
		red = redactText(s, textOpts{digest: sc.digest}, w.c)
	}
	if red == s {
		w.out.Write(raw) // untouched strings keep their exact encoding
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(red)
	w.out.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// lazyRegexp compiles expr at its first use. The redact package is in the agent's binary, whose
// package-level state is built at every start, each wasm worker's included (host/RATIONALE.md,
// "Footprint"), and workers never redact.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
