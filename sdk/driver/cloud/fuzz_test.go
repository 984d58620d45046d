package cloud

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Page tokens and create requests come from outside the driver: they are refused with cloud.invalid,
// never a panic, and a window never asks for more than a page holds.

func FuzzWindowFor(f *testing.F) {
	f.Add(0, "")
	f.Add(7, "o25")
	f.Add(-1, "x")
	f.Fuzz(func(t *testing.T, size int, token string) {
		w, err := WindowFor(ListRequest{PageSize: size, PageToken: token}, 25, 500, 100)
		if err != nil {
			if !errcode.Has(err, errcode.CloudInvalid) {
				t.Fatalf("WindowFor refused with %v", err)
			}
			return
		}
		if w.Page < 1 || w.PerPage < 25 || w.PerPage > 500 || w.Skip < 0 || w.Skip >= w.PerPage || w.Take < 1 || w.Take > w.PerPage {
			t.Fatalf("window %+v out of bounds", w)
		}
	})
}

func FuzzCreateRequestValidate(f *testing.F) {
	f.Add("us-east", "g6-nanode-1", "linode/debian12", "web-1", "prod", "ssh-ed25519 AAAA x", "enabled")
	f.Fuzz(func(t *testing.T, region, typ, image, label, tag, key, enc string) {
		r := CreateRequest{Region: region, Type: typ, Image: image, Label: label, Tags: []string{tag}, SSHKeys: []string{key}, DiskEncryption: DiskEncryption(enc)}
		if err := r.Validate(); err != nil && !errcode.Has(err, errcode.CloudInvalid) {
			t.Fatalf("Validate refused with %v", err)
		}
	})
}
