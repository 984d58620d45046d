package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

type tokenList struct{ api.TokenList }

func (l tokenList) Text(w io.Writer) {
	for _, t := range l.Tokens {
		state := "active"
		if !t.RevokedAt.IsZero() {
			state = "revoked"
		}
		fmt.Fprintf(w, "%s  %-8s %-7s %s\n", t.ID, t.Role, state, esc(t.Name))
	}
}

func tokensListCmd() *cli.Command {
	return simple("tokens list", "", "list admin tokens, revoked ones too (never their secrets; the admin role)", 0, 0, nil,
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l tokenList
			return l, c.call(ctx, api.TokensList, nil, nil, nil, &l)
		})
}

type newToken struct{ api.NewToken }

func (n newToken) Text(w io.Writer) {
	fmt.Fprintf(w, "token %s (%s), role %s\n%s\nthe secret is shown this once; keep it in a file only its user reads\n", esc(n.Token.Name), n.Token.ID, n.Token.Role, n.Secret)
}

func tokensCreateCmd() *cli.Command {
	var name, role string
	return simple("tokens create", "--role viewer|operator|admin --name NAME", "make an admin token and show its secret once (the admin role)", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&role, "role", "", "viewer, operator or admin (required)")
			fs.StringVar(&name, "name", "", "a name for the token, shown in audit records (required)")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			if role == "" || name == "" {
				return nil, cli.UsageError("--role and --name are required")
			}
			var n newToken
			return n, c.call(ctx, api.TokensCreate, nil, nil, api.TokenRequest{Name: name, Role: api.Role(role)}, &n)
		})
}

type revokedToken struct{ api.Token }

func (t revokedToken) Text(w io.Writer) {
	fmt.Fprintf(w, "token %s (%s) revoked; its web UI sessions end with it\n", esc(t.Name), t.ID)
}

func tokensRevokeCmd() *cli.Command {
	return simple("tokens revoke", "ID", "revoke an admin token (the admin role)", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var t revokedToken
			return t, c.call(ctx, api.TokensRevoke, args, nil, nil, &t)
		})
}
