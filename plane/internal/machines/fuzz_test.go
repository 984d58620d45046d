package machines

import (
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// FuzzRequest: whatever an operator types, a machine is either refused with a machine.* code or
// accepted with a name, an OS release the support table knows and a retire-by in range.
func FuzzRequest(f *testing.F) {
	f.Add("nas", "backups", "ops", "debian 12", "2027-01-31")
	f.Add("Bad Name", "", "x", "bookworm", "1970-01-01")
	f.Add("old-box", "p", "o", "rhel 9.4", "")
	f.Fuzz(func(t *testing.T, name, purpose, owner, rel, retire string) {
		p, err := request(api.MachineRequest{Name: name, Purpose: purpose, Owner: owner, OSRelease: rel, RetireBy: retire})
		if err != nil {
			if !strings.HasPrefix(errcode.Code(err), "machine.") {
				t.Fatalf("refused without a machine code: %v", err)
			}
			return
		}
		if !nameRE.MatchString(p.Name) || p.Purpose == "" || p.Owner == "" {
			t.Fatalf("accepted %+v", p)
		}
		if _, err := parseRelease(p.OSRelease); err != nil {
			t.Fatalf("accepted release %q: %v", p.OSRelease, err)
		}
		if !p.RetireBy.IsZero() && (p.RetireBy.Year() < 2000 || p.RetireBy.Year() > 2100) {
			t.Fatalf("accepted retire-by %v", p.RetireBy)
		}
	})
}
