package wordtest_test

import (
	"context"
	"fmt"

	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

// A word that reads or restarts units is tested on any machine against a fake service manager, given
// as `systemctl show` output: load the word with wordtest.WithSystemd(fake) and read fake.Actions()
// afterwards to see what it changed.
//
//	w := wordtest.Load(t, "restart_unit.wasm", "manifest.json", wordtest.WithSystemd(fake))
//	w.Must(map[string]any{"unit": "nginx.service"}, nil)
func ExampleNewFakeSystemd() {
	fake := wordtest.NewFakeSystemd(map[string]string{
		"nginx.service": "ActiveState=failed\nSubState=failed\nResult=exit-code\nLoadState=loaded",
	})
	ctx := context.Background()
	u, _ := fake.Unit(ctx, "nginx.service")
	fmt.Println(u.ActiveState, u.Result)

	_ = fake.Restart(ctx, "nginx.service") // what the host does when the word calls word.Systemd().Restart
	u, _ = fake.Unit(ctx, "nginx.service")
	fmt.Println(u.ActiveState, fake.Actions())

	missing, _ := fake.Unit(ctx, "absent.service")
	fmt.Println(missing.LoadState)
	// Output:
	// failed exit-code
	// active [restart nginx.service]
	// not-found
}
