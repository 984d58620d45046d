package roles

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

// FuzzParse: whatever a role file holds, Parse answers a role whose footprint is valid or a coded
// error, and never panics.
func FuzzParse(f *testing.F) {
	f.Add([]byte(webYAML))
	f.Add([]byte(`{"name":"db","packages":[{"name":"pg"}]}`))
	f.Add([]byte("name: web\ngroups: &g [{name: a}]\nusers: *g"))
	f.Add([]byte("name: web\nfiles: [{path: /etc/a, content_base64: eA==, mode: \"0600\"}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			if c := errcode.Code(err); c != errcode.RoleInvalid && c != errcode.RoleTooLarge {
				t.Fatalf("code %q: %v", c, err)
			}
			return
		}
		if err := footprint.Validate(p.Role.Footprint); err != nil {
			t.Fatalf("parsed role renders an invalid footprint: %v", err)
		}
		if _, err := Render([]Spec{p.Role, p.Role}); err != nil {
			t.Fatalf("a role conflicts with itself: %v", err)
		}
	})
}
