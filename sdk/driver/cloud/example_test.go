package cloud_test

import (
	"fmt"

	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
)

// A provider that pages by number (page=N, per_page=M) serves any page size the caller asks through a
// Window: fetch the provider's page, Cut what was asked, and hand back Next as the opaque token.
func ExampleWindowFor() {
	instances := []string{"a", "b", "c", "d", "e", "f", "g"}
	// providerPage is the provider's API: numbered pages of perPage.
	providerPage := func(page, perPage int) []string {
		from := min((page-1)*perPage, len(instances))
		return instances[from:min(from+perPage, len(instances))]
	}
	req := cloud.ListRequest{PageSize: 3}
	for {
		w, err := cloud.WindowFor(req, 2, 5, 20) // the provider allows 2 to 5 per page
		if err != nil {
			fmt.Println(err)
			return
		}
		got := cloud.Cut(w, providerPage(w.Page, w.PerPage))
		fmt.Println(got)
		if req.PageToken = w.Next(len(got), len(instances)); req.PageToken == "" {
			break
		}
	}
	// Output:
	// [a b c]
	// [d e f]
	// [g]
}

// A driver's account settings are a closed JSON schema: SettingsSchema closes the given properties and
// adds the API endpoint every cloud driver takes, so a setting the driver does not know is refused when
// an admin adds the account.
func ExampleSettingsSchema() {
	s := cloud.SettingsSchema(`"region": {"type": "string"}`, "region")
	fmt.Println(string(s))
	// Output:
	// {
	//   "$schema": "https://json-schema.org/draft/2020-12/schema",
	//   "type": "object",
	//   "additionalProperties": false,
	//   "required": ["region"],
	//   "properties": {
	//     "region": {"type": "string"},
	//     "endpoint": {"type": "string", "maxLength": 300}
	//   }
	// }
}
