package errcode_test

import (
	"fmt"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func ExampleLookup() {
	s, _ := errcode.Lookup(errcode.DriverTimeout)
	fmt.Println(s.Status, s.Change)
	fmt.Println(errcode.Status("restart_unit.failed"), errcode.Reserved(errcode.StoreBusy), errcode.Reserved("restart_unit.failed"))
	// Output:
	// 504 maybe_changed
	// 500 true false
}
