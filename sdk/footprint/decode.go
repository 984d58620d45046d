package footprint

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Decode reads a footprint strictly and checks it with Validate. Every fault is footprint.invalid
// with details.field a JSON pointer to the member at fault: a member the format does not have, one
// that appears twice in its object, one of the wrong type, one missing, or a value that breaks a rule.
//
// It walks the JSON itself rather than decoding into the structs with encoding/json, which names an
// unknown member without saying where it is and keeps the last of two repeated ones.
func Decode(data []byte) (*Footprint, error) {
	if len(data) > MaxBytes {
		return nil, invalid("", "a footprint is at most %d bytes, this one is %d", MaxBytes, len(data))
	}
	var fp Footprint
	d := &decoder{}
	if err := d.footprint(data, &fp); err != nil {
		return nil, err
	}
	if err := Validate(&fp); err != nil {
		return nil, err
	}
	return &fp, nil
}

func invalid(field, format string, args ...any) *errcode.Error {
	if field != "" {
		format = field + ": " + format
	}
	return errcode.New(errcode.FootprintInvalid, format, args...).With(errcode.DetailField, field)
}

type decoder struct{ items int }

// member decodes one member's raw value at ptr.
type member func(raw json.RawMessage, ptr string) error

// object walks the JSON object raw at ptr: each member must be one of fields and appear once, and each
// of required must be present.
func (d *decoder) object(raw json.RawMessage, ptr string, fields map[string]member, required ...string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return invalid(ptr, "is not JSON")
	}
	if tok != json.Delim('{') {
		return invalid(ptr, "must be an object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return invalid(ptr, "is not JSON")
		}
		key := tok.(string)
		at := ptr + "/" + escape(key)
		if seen[key] {
			return invalid(at, "appears twice")
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return invalid(at, "is not JSON")
		}
		fn, ok := fields[key]
		if !ok {
			return invalid(at, "is not a member of a footprint here")
		}
		if err := fn(v, at); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return invalid(ptr, "is not JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid(ptr, "has something after its end")
	}
	for _, r := range required {
		if !seen[r] {
			return invalid(ptr+"/"+r, "is required")
		}
	}
	return nil
}

// array walks the JSON array raw at ptr, calling each for every element with its pointer.
func (d *decoder) array(raw json.RawMessage, ptr string, max int, each member) error {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil || elems == nil {
		return invalid(ptr, "must be an array")
	}
	if len(elems) > max {
		return invalid(ptr, "holds at most %d entries", max)
	}
	for i, e := range elems {
		if err := each(e, ptr+"/"+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	return nil
}

// items counts n more items against MaxItems.
func (d *decoder) count(ptr string) error {
	if d.items++; d.items > MaxItems {
		return invalid(ptr, "a footprint holds at most %d items", MaxItems)
	}
	return nil
}

func str(dst *string) member {
	return func(raw json.RawMessage, ptr string) error {
		if err := json.Unmarshal(raw, dst); err != nil || isNull(raw) {
			return invalid(ptr, "must be a string")
		}
		return nil
	}
}

func boolean(dst *bool) member {
	return func(raw json.RawMessage, ptr string) error {
		if err := json.Unmarshal(raw, dst); err != nil || isNull(raw) {
			return invalid(ptr, "must be true or false")
		}
		return nil
	}
}

// integer decodes a JSON integer (no fraction, no exponent) into an int64.
func integer(dst *int64) member {
	return func(raw json.RawMessage, ptr string) error {
		s := strings.TrimSpace(string(raw))
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return invalid(ptr, "must be an integer")
		}
		*dst = n
		return nil
	}
}

func intValue(dst *int) member {
	return func(raw json.RawMessage, ptr string) error {
		var n int64
		if err := integer(&n)(raw, ptr); err != nil {
			return err
		}
		if n < -1<<31 || n > 1<<31-1 {
			return invalid(ptr, "is out of range")
		}
		*dst = int(n)
		return nil
	}
}

// strings decodes an array of strings; with nullable, null leaves dst nil (unmanaged) while [] makes
// it empty and not nil.
func stringList(dst *[]string, max int, nullable bool) member {
	return func(raw json.RawMessage, ptr string) error {
		if isNull(raw) {
			if nullable {
				*dst = nil
				return nil
			}
			return invalid(ptr, "must be an array of strings")
		}
		out := []string{}
		d := &decoder{}
		err := d.array(raw, ptr, max, func(e json.RawMessage, at string) error {
			var s string
			if err := str(&s)(e, at); err != nil {
				return err
			}
			out = append(out, s)
			return nil
		})
		if err != nil {
			return err
		}
		*dst = out
		return nil
	}
}

func isNull(raw json.RawMessage) bool { return strings.TrimSpace(string(raw)) == "null" }

// escape makes key one JSON pointer token (RFC 6901).
func escape(key string) string {
	if !strings.ContainsAny(key, "~/") {
		return key
	}
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

func (d *decoder) footprint(data []byte, fp *Footprint) error {
	return d.object(data, "", map[string]member{
		"schema": str(&fp.Schema),
		"files": func(raw json.RawMessage, ptr string) error {
			return d.array(raw, ptr, MaxItems, func(e json.RawMessage, at string) error {
				var f File
				if err := d.file(e, at, &f); err != nil {
					return err
				}
				fp.Files = append(fp.Files, f)
				return nil
			})
		},
		"units": func(raw json.RawMessage, ptr string) error {
			return d.array(raw, ptr, MaxItems, func(e json.RawMessage, at string) error {
				var u Unit
				if err := d.unit(e, at, &u); err != nil {
					return err
				}
				fp.Units = append(fp.Units, u)
				return nil
			})
		},
		"users": func(raw json.RawMessage, ptr string) error {
			return d.array(raw, ptr, MaxItems, func(e json.RawMessage, at string) error {
				var u User
				if err := d.user(e, at, &u); err != nil {
					return err
				}
				fp.Users = append(fp.Users, u)
				return nil
			})
		},
		"groups": func(raw json.RawMessage, ptr string) error {
			return d.array(raw, ptr, MaxItems, func(e json.RawMessage, at string) error {
				var g Group
				if err := d.count(at); err != nil {
					return err
				}
				if err := d.object(e, at, map[string]member{
					"name": str(&g.Name), "state": str(&g.State), "system": boolean(&g.System), "enforce": boolean(&g.Enforce),
				}, "name", "state"); err != nil {
					return err
				}
				fp.Groups = append(fp.Groups, g)
				return nil
			})
		},
		"firewall": func(raw json.RawMessage, ptr string) error {
			if isNull(raw) {
				return nil
			}
			var fw Firewall
			if err := d.firewall(raw, ptr, &fw); err != nil {
				return err
			}
			fp.Firewall = &fw
			return nil
		},
		"sysctl": func(raw json.RawMessage, ptr string) error {
			return d.array(raw, ptr, MaxItems, func(e json.RawMessage, at string) error {
				var s Sysctl
				if err := d.count(at); err != nil {
					return err
				}
				if err := d.object(e, at, map[string]member{
					"key": str(&s.Key), "value": str(&s.Value), "enforce": boolean(&s.Enforce),
				}, "key", "value"); err != nil {
					return err
				}
				fp.Sysctl = append(fp.Sysctl, s)
				return nil
			})
		},
		"packages": func(raw json.RawMessage, ptr string) error {
			return d.array(raw, ptr, MaxItems, func(e json.RawMessage, at string) error {
				var p Package
				if err := d.count(at); err != nil {
					return err
				}
				if err := d.object(e, at, map[string]member{
					"name": str(&p.Name), "state": str(&p.State), "version": str(&p.Version), "enforce": boolean(&p.Enforce),
				}, "name", "state"); err != nil {
					return err
				}
				fp.Packages = append(fp.Packages, p)
				return nil
			})
		},
	}, "schema")
}

func (d *decoder) file(raw json.RawMessage, ptr string, f *File) error {
	if err := d.count(ptr); err != nil {
		return err
	}
	return d.object(raw, ptr, map[string]member{
		"path": str(&f.Path), "sha256": str(&f.SHA256), "size": integer(&f.Size), "mode": str(&f.Mode),
		"owner": str(&f.Owner), "group": str(&f.Group), "enforce": boolean(&f.Enforce),
	}, "path", "sha256", "size", "mode", "owner", "group")
}

func (d *decoder) unit(raw json.RawMessage, ptr string, u *Unit) error {
	if err := d.count(ptr); err != nil {
		return err
	}
	return d.object(raw, ptr, map[string]member{
		"name": str(&u.Name), "enabled": boolean(&u.Enabled), "started": boolean(&u.Started),
		"files": stringList(&u.Files, MaxItems, false), "on_change": str(&u.OnChange), "enforce": boolean(&u.Enforce),
	}, "name", "enabled", "started")
}

func (d *decoder) user(raw json.RawMessage, ptr string, u *User) error {
	if err := d.count(ptr); err != nil {
		return err
	}
	return d.object(raw, ptr, map[string]member{
		"name": str(&u.Name), "state": str(&u.State), "system": boolean(&u.System), "shell": str(&u.Shell),
		"home": str(&u.Home), "groups": stringList(&u.Groups, MaxItems, true), "ssh_keys": stringList(&u.SSHKeys, MaxSSHKeys, true),
		"enforce": boolean(&u.Enforce),
	}, "name", "state")
}

func (d *decoder) firewall(raw json.RawMessage, ptr string, fw *Firewall) error {
	if err := d.count(ptr); err != nil {
		return err
	}
	return d.object(raw, ptr, map[string]member{
		"state": str(&fw.State), "enforce": boolean(&fw.Enforce),
		"inbound": func(raw json.RawMessage, ptr string) error {
			fw.Inbound = []Rule{}
			return d.array(raw, ptr, MaxRules, func(e json.RawMessage, at string) error {
				var r Rule
				if err := d.object(e, at, map[string]member{
					"protocol": str(&r.Protocol), "port": intValue(&r.Port), "to": intValue(&r.To),
					"sources": stringList(&r.Sources, MaxSources, false),
				}, "protocol", "port"); err != nil {
					return err
				}
				fw.Inbound = append(fw.Inbound, r)
				return nil
			})
		},
	}, "state")
}
