package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

type tokenResult struct {
	store.Token
	Secret string `json:"token"`
}

func (r tokenResult) Text(w io.Writer) {
	fmt.Fprintf(w, "%s\n", r.Secret)
	fmt.Fprintf(w, "(token %s, role %s; shown once, store it now)\n", r.Name, r.Role)
}

func tokenCreateCmd() *cli.Command {
	var sf storeFlags
	var role, name string
	return &cli.Command{
		Path: "token create", Args: "--role viewer|operator|admin [--name NAME]", MaxArgs: 0,
		Summary: "mint an admin API token; it is printed once and stored only as a hash",
		Setup: func(fs *flag.FlagSet) {
			sf.setup(fs)
			fs.StringVar(&role, "role", "", "viewer, operator or admin (required)")
			fs.StringVar(&name, "name", "", "a name for the token, shown in audit records (default: the role)")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			switch store.Role(role) {
			case store.RoleViewer, store.RoleOperator, store.RoleAdmin:
			default:
				return nil, cli.UsageError("--role must be viewer, operator or admin")
			}
			if name == "" {
				name = role
			}
			st, err := sf.open(ctx)
			if err != nil {
				return nil, err
			}
			defer st.Close()
			secret, hash := tokens.Mint()
			t, err := st.TokenCreate(ctx, store.TokenCreateParams{Name: name, Role: store.Role(role), Hash: hash})
			if err != nil {
				return nil, err
			}
			return tokenResult{Token: t, Secret: secret}, nil
		},
	}
}

type tokenList struct {
	Tokens []store.Token `json:"tokens"`
}

func (l tokenList) Text(w io.Writer) {
	for _, t := range l.Tokens {
		state := "active"
		if !t.RevokedAt.IsZero() {
			state = "revoked"
		}
		fmt.Fprintf(w, "%s  %-10s %-8s %s\n", t.ID, t.Role, state, t.Name)
	}
}

func tokenListCmd() *cli.Command {
	var sf storeFlags
	return &cli.Command{
		Path: "token list", Summary: "list admin tokens (never their secrets)", MaxArgs: 0,
		Setup: sf.setup,
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			st, err := sf.open(ctx)
			if err != nil {
				return nil, err
			}
			defer st.Close()
			list, err := st.TokenList(ctx, store.TokenListParams{})
			if list == nil {
				list = []store.Token{}
			}
			return tokenList{list}, err
		},
	}
}

func tokenRevokeCmd() *cli.Command {
	var sf storeFlags
	return &cli.Command{
		Path: "token revoke", Args: "ID", MinArgs: 1, MaxArgs: 1, Summary: "revoke an admin token for good",
		Setup: sf.setup,
		Run: func(ctx context.Context, env *cli.Env, args []string) (any, error) {
			st, err := sf.open(ctx)
			if err != nil {
				return nil, err
			}
			defer st.Close()
			return st.TokenRevoke(ctx, store.TokenRevokeParams{ID: args[0]})
		},
	}
}
