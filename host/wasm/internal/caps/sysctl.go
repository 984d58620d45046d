package caps

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Where sysctl values live now and where they are kept for the next boot. The persisted file is the
// one file beneath /etc/sysctl.d Lexicon owns; its number puts it after the distribution's own.
const (
	procSys       = "/proc/sys/"
	sysctlPersist = "/etc/sysctl.d/90-lexicon.conf"
)

// sysctlFile maps a key to its file: a key has only letters, digits, _, - and dots, so it cannot leave
// /proc/sys.
func sysctlFile(key string) string { return procSys + strings.ReplaceAll(key, ".", "/") }

func sysctlKeyAllowed(c manifest.Capability, key string) error {
	if !footprint.ValidSysctlKey(key) {
		return invalid("keys", "%q is not a sysctl key", key)
	}
	if !matchAny(c.Names, key) {
		return denied(c.Cap, "%s matches no declared name", key).With(errcode.DetailName, key)
	}
	return nil
}

func readSysctl(key string) (string, bool, error) {
	b, err := os.ReadFile(sysctlFile(key))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, errcode.Wrap(err, errcode.CapabilityFailed, "cannot read sysctl %s", key).With(errcode.DetailName, key)
	}
	return footprint.SysctlValue(string(b)), true, nil
}

func sysctlRead(_ context.Context, _ *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.SysctlRead
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if len(req.Keys) > footprint.MaxItems {
		return nil, invalid("keys", "at most %d keys", footprint.MaxItems)
	}
	out := capv1.SysctlReadResult{Values: map[string]string{}}
	for _, k := range req.Keys {
		if err := sysctlKeyAllowed(c, k); err != nil {
			return nil, err
		}
		v, ok, err := readSysctl(k)
		if err != nil {
			return nil, err
		}
		if ok {
			out.Values[k] = v
		} else {
			out.Missing = append(out.Missing, k)
		}
	}
	return out, nil
}

// sysctlApply writes the values that differ to /proc/sys and rewrites the persisted file to hold
// exactly the set given (keys this kernel lacks left out), atomically, when it differs.
func sysctlApply(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.SysctlApply
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	fp := &footprint.Footprint{Schema: footprint.SchemaName}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range req.Values {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		if err := sysctlKeyAllowed(c, k); err != nil {
			return nil, err
		}
		fp.Sysctl = append(fp.Sysctl, footprint.Sysctl{Key: k, Value: req.Values[k]})
	}
	if err := footprint.Validate(fp); err != nil {
		return nil, err
	}
	if err := check(ctx, w, fp); err != nil {
		return nil, err
	}
	out := capv1.SysctlApplyResult{Changed: []string{}}
	var persist strings.Builder
	persist.WriteString("# Kernel parameters of this node's footprint, written by Lexicon's converge: edits are undone.\n")
	for _, k := range keys {
		want := footprint.SysctlValue(req.Values[k])
		have, ok, err := readSysctl(k)
		if err != nil {
			return nil, err
		}
		if !ok {
			out.Missing = append(out.Missing, k)
			continue
		}
		persist.WriteString(k + " = " + want + "\n")
		if have == want {
			continue
		}
		if err := os.WriteFile(sysctlFile(k), []byte(want+"\n"), 0); err != nil {
			return nil, errcode.Wrap(err, errcode.CapabilityFailed, "cannot set sysctl %s", k).With(errcode.DetailName, k)
		}
		out.Changed = append(out.Changed, k)
	}
	old, _ := os.ReadFile(sysctlPersist)
	if string(old) != persist.String() {
		if err := os.MkdirAll("/etc/sysctl.d", 0o755); err != nil {
			return nil, errcode.Wrap(err, errcode.CapabilityFailed, "cannot make /etc/sysctl.d")
		}
		if err := writeState("/etc/sysctl.d", "90-lexicon.conf", []byte(persist.String())); err != nil {
			return nil, errcode.Wrap(err, errcode.CapabilityFailed, "sysctl values are set, but %s could not be written", sysctlPersist)
		}
		_ = os.Chmod(sysctlPersist, 0o644)
		out.Persisted = true
	}
	return out, nil
}
