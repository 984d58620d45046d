package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

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

type securityCritical struct{ api.SecurityCritical }

func (v securityCritical) Text(w io.Writer) {
	list := "(none: no package is critical)"
	if len(v.Critical) > 0 {
		list = strings.Join(v.Critical, ", ")
	}
	fmt.Fprintf(w, "critical: %s\n", esc(list))
	if v.Source == api.CriticalFromSet {
		fmt.Fprintf(w, "set by %s at %s; the plane's own list: %s\n", esc(v.UpdatedBy), v.UpdatedAt.Format(time.RFC3339), esc(strings.Join(v.Plane, ", ")))
	} else {
		fmt.Fprintln(w, "the plane's own list (lexicon-plane serve --critical-packages)")
	}
}

// fleetCriticalCmds show, set and reset the critical package list at run time.
func fleetCriticalCmds() []*cli.Command {
	return []*cli.Command{
		simple("fleet critical show", "", "the critical package list in force (a fix waiting for one makes a node red), and where it comes from", 0, 0, nil,
			func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
				var v securityCritical
				return v, c.call(ctx, api.FleetSecurityCritical, nil, nil, nil, &v)
			}),
		func() *cli.Command {
			var none bool
			return simple("fleet critical set", "[PATTERN...]", "set the critical package list (path.Match patterns of package names: openssl 'linux-image-*'); stored and audited, in force on every replica at once; admin", 0, -1, // the plane bounds the list

				func(fs *flag.FlagSet) {
					fs.BoolVar(&none, "none", false, "set an empty list: no package is critical")
				},
				func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
					if len(args) == 0 && !none {
						return nil, cli.UsageError("name at least one pattern, or --none for an empty list")
					}
					if len(args) > 0 && none {
						return nil, cli.UsageError("--none takes no pattern")
					}
					var v securityCritical
					return v, c.call(ctx, api.FleetSecurityCriticalSet, nil, nil, api.SecurityCriticalRequest{Critical: append([]string{}, args...)}, &v)
				})
		}(),
		simple("fleet critical reset", "", "forget the list set at run time: the plane's own list is in force again; admin", 0, 0, nil,
			func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
				var v securityCritical
				return v, c.call(ctx, api.FleetSecurityCriticalSet, nil, nil, api.SecurityCriticalRequest{Critical: []string{}, Reset: true}, &v)
			}),
	}
}
