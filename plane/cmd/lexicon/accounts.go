package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// maxCredentialFile caps a credential file; credentials are tokens and keys, not documents.
const maxCredentialFile = 16 << 10

type accountOne struct{ api.Account }

func (a accountOne) Text(w io.Writer) {
	test := ""
	if a.Test {
		test = ", a test account"
	}
	fmt.Fprintf(w, "account %s (%s) on driver %s%s, credential sealed under master key %s\n", a.Name, a.ID, a.Driver, test, a.KeyID)
}

// readCredential reads a credential file: its text without the final line break. The credential is
// never an argument, so it never shows in ps, shell history or audit logs of the machine.
func readCredential(env *cli.Env, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", errcode.Wrap(err, errcode.IOFailed, "cannot read credential file %s", path)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		env.Progressf("warning: credential file %s is readable by others (mode %04o); chmod 600 it", path, fi.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCredentialFile+1))
	if err != nil {
		return "", errcode.Wrap(err, errcode.IOFailed, "cannot read credential file %s", path)
	}
	if len(data) > maxCredentialFile {
		return "", cli.UsageError("credential file %s is over %d bytes", path, maxCredentialFile)
	}
	cred := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	if strings.TrimSpace(cred) == "" {
		return "", cli.UsageError("credential file %s is empty", path)
	}
	return cred, nil
}

func accountsAddCmd() *cli.Command {
	var drv, name, credFile, settingsFile string
	var test bool
	return simple("accounts add", "--driver NAME --name ACCOUNT --credential-file F [--settings-file S] [--test]",
		"add a driver account; the plane checks it with the driver and seals the credential", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&drv, "driver", "", "the driver (lexicon drivers list), enabled")
			fs.StringVar(&name, "name", "", "the account's name")
			fs.StringVar(&credFile, "credential-file", "", "file holding the credential (API token, TSIG secret); never give it as an argument")
			fs.StringVar(&settingsFile, "settings-file", "", "JSON file of the account's settings, checked against the driver's schema")
			fs.BoolVar(&test, "test", false, "mark it a test account: automation may delete instances there that it did not tag")
		},
		func(ctx context.Context, env *cli.Env, c *client, _ []string) (any, error) {
			if drv == "" || name == "" || credFile == "" {
				return nil, cli.UsageError("accounts add needs --driver, --name and --credential-file")
			}
			req := api.AccountAdd{Driver: drv, Name: name, Test: test}
			if settingsFile != "" {
				data, err := os.ReadFile(settingsFile)
				if err != nil {
					return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read settings file %s", settingsFile)
				}
				if !json.Valid(data) {
					return nil, cli.UsageError("settings file %s is not JSON", settingsFile)
				}
				req.Settings = data
			}
			cred, err := readCredential(env, credFile)
			if err != nil {
				return nil, err
			}
			req.Credential = cred
			var a accountOne
			return a, c.call(ctx, api.AccountsAdd, nil, nil, req, &a)
		})
}

type accountList struct{ api.AccountList }

func (l accountList) Text(w io.Writer) {
	if len(l.Accounts) == 0 {
		fmt.Fprintln(w, "no accounts")
	}
	for _, a := range l.Accounts {
		test := ""
		if a.Test {
			test = " test"
		}
		fmt.Fprintf(w, "%-20s %-20s added %s by %s%s  settings %s\n", a.Name, a.Driver, short(a.CreatedAt), a.CreatedBy, test, a.Settings)
	}
}

func accountsListCmd() *cli.Command {
	var drv string
	return simple("accounts list", "[--driver NAME]", "list driver accounts (never their credentials)", 0, 0,
		func(fs *flag.FlagSet) { fs.StringVar(&drv, "driver", "", "only accounts of this driver") },
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l accountList
			return l, c.call(ctx, api.AccountsList, nil, api.AccountsListQuery{Driver: drv}.Values(), nil, &l)
		})
}

type accountRemoved struct{ api.Account }

func (a accountRemoved) Text(w io.Writer) {
	fmt.Fprintf(w, "removed account %s of driver %s; its sealed credential is deleted\n", a.Name, a.Driver)
}

func accountsRemoveCmd() *cli.Command {
	return simple("accounts remove", "NAME", "remove a driver account and its sealed credential", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var a accountRemoved
			return a, c.call(ctx, api.AccountsRemove, args, nil, nil, &a)
		})
}

// accountsTestCmd marks or unmarks a test account. On a test account the safety catch stands aside:
// automation (rollouts, provisioning cleanup) may delete instances it did not tag.
func accountsTestCmd(path, summary string, test bool) *cli.Command {
	return simple(path, "NAME", summary, 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var a accountOne
			return a, c.call(ctx, api.AccountsSetTest, args, nil, api.AccountTest{Test: test}, &a)
		})
}

func accountsMarkTestCmd() *cli.Command {
	return accountsTestCmd("accounts mark-test", "mark a test account: automation may delete instances there that it did not tag (admin)", true)
}

func accountsUnmarkTestCmd() *cli.Command {
	return accountsTestCmd("accounts unmark-test", "unmark a test account: automation deletes only instances carrying its tag", false)
}
