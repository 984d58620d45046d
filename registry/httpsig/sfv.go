package httpsig

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// This file holds the subset of RFC 8941 structured fields the channel's three headers use:
// dictionaries whose members are items or inner lists, with parameters, and the bare item types
// integer, string, token, byte sequence and boolean. It is stricter than RFC 8941 where the RFC is
// lenient in a way that could make two readers disagree: a repeated dictionary key or parameter key is
// refused (RFC 8941 keeps the last one), decimals are refused (no channel field has one), byte
// sequences must be canonical padded base64, and sizes are bounded.

const (
	maxFieldLen   = 4096 // bytes of one field value
	maxMembers    = 8    // members of one dictionary
	maxInnerItems = 16   // items of one inner list
	maxParams     = 16   // parameters of one item or inner list
)

// token is an sf-token, kept distinct from an sf-string so that a token never passes for a string.
type token string

// param is one parameter; val is int64, string, token, []byte or bool.
type param struct {
	key string
	val any
}

// item is a bare item with its parameters.
type item struct {
	val    any
	params []param
}

// innerList is a parenthesised list of items with its own parameters.
type innerList struct {
	items  []item
	params []param
}

// member is one dictionary member; val is an item or an innerList.
type member struct {
	key string
	val any
}

var errSyntax = errors.New("structured field syntax")

// sfParser reads one field value. Errors carry the offset so fuzzing and people can tell where.
type sfParser struct {
	s string
	i int
}

func (p *sfParser) fail(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", errSyntax, p.i, fmt.Sprintf(format, args...))
}

func (p *sfParser) eof() bool { return p.i >= len(p.s) }

func (p *sfParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.s[p.i]
}

func (p *sfParser) skipSP() {
	for !p.eof() && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *sfParser) skipOWS() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// parseDictionary parses a whole field value as an RFC 8941 dictionary (section 4.2.2), refusing
// repeated keys, and an empty value.
func parseDictionary(s string) ([]member, error) {
	if len(s) > maxFieldLen {
		return nil, fmt.Errorf("%w: field value is %d bytes, over the %d-byte cap", errSyntax, len(s), maxFieldLen)
	}
	p := &sfParser{s: s}
	p.skipSP()
	var out []member
	seen := map[string]bool{}
	for !p.eof() {
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, p.fail("dictionary key %q repeated", key)
		}
		seen[key] = true
		if len(out) == maxMembers {
			return nil, p.fail("more than %d dictionary members", maxMembers)
		}
		var val any
		if p.peek() == '=' {
			p.i++
			if val, err = p.itemOrInnerList(); err != nil {
				return nil, err
			}
		} else {
			params, err := p.parameters()
			if err != nil {
				return nil, err
			}
			val = item{val: true, params: params}
		}
		out = append(out, member{key: key, val: val})
		p.skipOWS()
		if p.eof() {
			break
		}
		if p.peek() != ',' {
			return nil, p.fail("expected ',' between dictionary members")
		}
		p.i++
		p.skipOWS()
		if p.eof() {
			return nil, p.fail("trailing ',' in dictionary")
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty dictionary", errSyntax)
	}
	return out, nil
}

func (p *sfParser) itemOrInnerList() (any, error) {
	if p.peek() == '(' {
		return p.innerList()
	}
	return p.item()
}

func (p *sfParser) innerList() (innerList, error) {
	var il innerList
	p.i++ // '('
	for {
		p.skipSP()
		if p.eof() {
			return il, p.fail("unterminated inner list")
		}
		if p.peek() == ')' {
			p.i++
			params, err := p.parameters()
			il.params = params
			return il, err
		}
		if len(il.items) == maxInnerItems {
			return il, p.fail("more than %d inner list items", maxInnerItems)
		}
		it, err := p.item()
		if err != nil {
			return il, err
		}
		il.items = append(il.items, it)
		if c := p.peek(); c != ' ' && c != ')' {
			return il, p.fail("expected ' ' or ')' after inner list item")
		}
	}
}

func (p *sfParser) item() (item, error) {
	v, err := p.bareItem()
	if err != nil {
		return item{}, err
	}
	params, err := p.parameters()
	return item{val: v, params: params}, err
}

func (p *sfParser) parameters() ([]param, error) {
	var out []param
	for p.peek() == ';' {
		p.i++
		p.skipSP()
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		for _, q := range out {
			if q.key == key {
				return nil, p.fail("parameter %q repeated", key)
			}
		}
		if len(out) == maxParams {
			return nil, p.fail("more than %d parameters", maxParams)
		}
		var val any = true
		if p.peek() == '=' {
			p.i++
			if val, err = p.bareItem(); err != nil {
				return nil, err
			}
		}
		out = append(out, param{key: key, val: val})
	}
	return out, nil
}

func isLCAlpha(c byte) bool { return c >= 'a' && c <= 'z' }
func isAlpha(c byte) bool   { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool   { return c >= '0' && c <= '9' }

// isTChar is RFC 9110's tchar.
func isTChar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func (p *sfParser) key() (string, error) {
	start := p.i
	if c := p.peek(); !isLCAlpha(c) && c != '*' {
		return "", p.fail("key must start with a lowercase letter or '*'")
	}
	for !p.eof() {
		c := p.s[p.i]
		if !isLCAlpha(c) && !isDigit(c) && c != '_' && c != '-' && c != '.' && c != '*' {
			break
		}
		p.i++
	}
	return p.s[start:p.i], nil
}

func (p *sfParser) bareItem() (any, error) {
	switch c := p.peek(); {
	case c == '-' || isDigit(c):
		return p.integer()
	case c == '"':
		return p.str()
	case c == '*' || isAlpha(c):
		return p.tok(), nil
	case c == ':':
		return p.byteSeq()
	case c == '?':
		return p.boolean()
	default:
		return nil, p.fail("not the start of an item")
	}
}

func (p *sfParser) integer() (int64, error) {
	start := p.i
	if p.peek() == '-' {
		p.i++
	}
	digits := p.i
	for !p.eof() && isDigit(p.s[p.i]) {
		p.i++
	}
	switch n := p.i - digits; {
	case n == 0:
		return 0, p.fail("integer without digits")
	case n > 15:
		return 0, p.fail("integer over 15 digits")
	}
	if p.peek() == '.' {
		return 0, p.fail("decimals are not accepted")
	}
	return strconv.ParseInt(p.s[start:p.i], 10, 64)
}

func (p *sfParser) str() (string, error) {
	p.i++ // '"'
	var b strings.Builder
	for !p.eof() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.eof() {
				return "", p.fail("string ends in an escape")
			}
			n := p.s[p.i]
			if n != '"' && n != '\\' {
				return "", p.fail("string escapes only '\"' and '\\'")
			}
			p.i++
			b.WriteByte(n)
		case c == '"':
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", p.fail("string holds a byte outside printable ASCII")
		default:
			b.WriteByte(c)
		}
	}
	return "", p.fail("unterminated string")
}

func (p *sfParser) tok() token {
	start := p.i
	p.i++
	for !p.eof() && (isTChar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
		p.i++
	}
	return token(p.s[start:p.i])
}

var strictStdBase64 = base64.StdEncoding.Strict()

func (p *sfParser) byteSeq() ([]byte, error) {
	p.i++ // ':'
	end := strings.IndexByte(p.s[p.i:], ':')
	if end < 0 {
		return nil, p.fail("unterminated byte sequence")
	}
	enc := p.s[p.i : p.i+end]
	b, err := strictStdBase64.DecodeString(enc)
	// Canonical form only: a second encoding of the same bytes (missing padding, stray bits) is refused
	// so that the bytes and the text always name each other.
	if err != nil || strictStdBase64.EncodeToString(b) != enc {
		return nil, p.fail("byte sequence is not canonical padded base64")
	}
	p.i += end + 1
	return b, nil
}

func (p *sfParser) boolean() (bool, error) {
	p.i++ // '?'
	switch p.peek() {
	case '0':
		p.i++
		return false, nil
	case '1':
		p.i++
		return true, nil
	}
	return false, p.fail("boolean is neither ?0 nor ?1")
}

// Serialisation (RFC 8941 section 4.1), used for @signature-params and for the headers the signer
// writes. It serialises only what the parser accepts.

func serializeInnerList(b *strings.Builder, il innerList) error {
	b.WriteByte('(')
	for i, it := range il.items {
		if i > 0 {
			b.WriteByte(' ')
		}
		if err := serializeItem(b, it); err != nil {
			return err
		}
	}
	b.WriteByte(')')
	return serializeParams(b, il.params)
}

func serializeItem(b *strings.Builder, it item) error {
	if err := serializeBare(b, it.val); err != nil {
		return err
	}
	return serializeParams(b, it.params)
}

func serializeParams(b *strings.Builder, ps []param) error {
	for _, p := range ps {
		b.WriteByte(';')
		b.WriteString(p.key)
		if v, ok := p.val.(bool); ok && v {
			continue
		}
		b.WriteByte('=')
		if err := serializeBare(b, p.val); err != nil {
			return err
		}
	}
	return nil
}

func serializeBare(b *strings.Builder, v any) error {
	switch v := v.(type) {
	case int64:
		if v > 999_999_999_999_999 || v < -999_999_999_999_999 {
			return fmt.Errorf("%w: integer %d out of range", errSyntax, v)
		}
		b.WriteString(strconv.FormatInt(v, 10))
	case string:
		b.WriteByte('"')
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c < 0x20 || c > 0x7e {
				return fmt.Errorf("%w: string holds a byte outside printable ASCII", errSyntax)
			}
			if c == '"' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		b.WriteByte('"')
	case token:
		b.WriteString(string(v))
	case []byte:
		b.WriteByte(':')
		b.WriteString(strictStdBase64.EncodeToString(v))
		b.WriteByte(':')
	case bool:
		if v {
			b.WriteString("?1")
		} else {
			b.WriteString("?0")
		}
	default:
		return fmt.Errorf("%w: cannot serialise %T", errSyntax, v)
	}
	return nil
}

// serializeDictionary is the inverse of parseDictionary, for tests and fuzzing.
func serializeDictionary(ms []member) (string, error) {
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(m.key)
		switch v := m.val.(type) {
		case innerList:
			b.WriteByte('=')
			if err := serializeInnerList(&b, v); err != nil {
				return "", err
			}
		case item:
			if t, ok := v.val.(bool); ok && t {
				if err := serializeParams(&b, v.params); err != nil {
					return "", err
				}
				continue
			}
			b.WriteByte('=')
			if err := serializeItem(&b, v); err != nil {
				return "", err
			}
		default:
			return "", fmt.Errorf("%w: member %T", errSyntax, v)
		}
	}
	return b.String(), nil
}
