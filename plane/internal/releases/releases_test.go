package releases_test

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/registry"
)

// TestReleaseBundleFileIsTheRegistrys: plane/api names the bundle of a release upload without linking
// the registry; it must be the name the registry writes.
func TestReleaseBundleFileIsTheRegistrys(t *testing.T) {
	if api.ReleaseBundleFile != registry.BundleFile {
		t.Fatalf("api.ReleaseBundleFile %q, registry.BundleFile %q", api.ReleaseBundleFile, registry.BundleFile)
	}
}
