package store_test

import (
	"path"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// FuzzCheckCritical: the critical list an admin types (split as the web form splits it) is either
// refused with security.critical_invalid, or every pattern in it is one path.Match accepts, of a
// package name's characters, at most 128 bytes.
func FuzzCheckCritical(f *testing.F) {
	for _, s := range []string{"openssl, libssl*", "linux-image-*", "lib[ssl", "Open SSL", "sudo sudo", "", "a\\b", "[^a-z]x", "g++-12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		list := strings.FieldsFunc(in, func(c rune) bool { return c == ',' || c == ' ' })
		err := store.CheckCritical(list)
		if err != nil {
			if errcode.Code(err) != errcode.SecurityCriticalInvalid {
				t.Fatalf("%q: %v", in, err)
			}
			return
		}
		for _, p := range list {
			if _, err := path.Match(p, "openssl"); err != nil || len(p) > 128 || strings.ContainsAny(p, "\\/ ABCZ") {
				t.Fatalf("accepted %q (%v)", p, err)
			}
		}
	})
}
