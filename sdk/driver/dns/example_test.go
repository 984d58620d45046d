package dns_test

import (
	"fmt"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
)

// Zone names are compared in one form: lower case and fully qualified, with the trailing dot.
func ExampleNormalizeZone() {
	z, err := dns.NormalizeZone("Example.COM.")
	fmt.Println(z, err)
	_, err = dns.NormalizeZone("not a zone")
	fmt.Println(err != nil)
	// Output:
	// example.com. <nil>
	// true
}

// A driver refuses bad input before it touches the provider, then plans the change against what the
// zone holds: PlanSet says what to delete and what to add so that a name and type hold exactly the
// given records, and nothing is rewritten that already matches.
func ExamplePlanSet() {
	existing := []dns.Record{
		{ID: "1", Name: "www", Type: "A", Value: "192.0.2.1", TTL: time.Hour},
		{ID: "2", Name: "www", Type: "A", Value: "192.0.2.2", TTL: time.Hour},
		{ID: "3", Name: "mail", Type: "A", Value: "192.0.2.9", TTL: time.Hour},
	}
	want, err := dns.NormalizeAll([]dns.Record{{Name: "WWW", Type: "a", Value: "192.0.2.2", TTL: time.Hour}, {Name: "www", Type: "A", Value: "192.0.2.3", TTL: time.Hour}})
	if err != nil {
		fmt.Println(err)
		return
	}
	del, add := dns.PlanSet(existing, want)
	for _, r := range del {
		fmt.Println("delete", r.ID, r.Name, r.Value)
	}
	for _, r := range add {
		fmt.Println("add", r.Name, r.Type, r.Value)
	}
	// Output:
	// delete 1 www 192.0.2.1
	// add www A 192.0.2.3
}
