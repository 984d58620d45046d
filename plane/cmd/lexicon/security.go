package main

import (
	"context"
	"fmt"
	"io"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

type securityView struct{ api.SecurityView }

func (v securityView) Text(w io.Writer) {
	fmt.Fprintf(w, "%d red, %d amber, %d grey, %d green\n", v.Counts[api.SecurityRed], v.Counts[api.SecurityAmber], v.Counts[api.SecurityGrey], v.Counts[api.SecurityGreen])
	for _, r := range v.Rows {
		fmt.Fprintf(w, "%-6s %-24s %s\n", r.Level, r.Node, r.OS)
		for _, why := range r.Reasons {
			fmt.Fprintf(w, "         %-5s %s\n", why.Level, clip(esc(why.Text), 200))
		}
	}
}

func fleetSecurityCmd() *cli.Command {
	return simple("fleet security", "", "every node's package security, red rows first: red (a critical fix waits, a critical service on replaced code, a half-done package run), amber, grey (nothing reported, or the node lacks packages_report), green", 0, 0, nil,
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var v securityView
			return v, c.call(ctx, api.FleetSecurity, nil, nil, nil, &v)
		})
}
