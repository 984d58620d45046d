package provision

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Bounds of an install command's token: it is a credential that joins a node, so it lives an hour
// unless asked otherwise, and never more than a week.
const (
	DefaultInstallExpiry = time.Hour
	MaxInstallExpiry     = 7 * 24 * time.Hour
)

// InstallScript is the install as a POSIX shell script for a machine that already exists: it writes
// the files cloud-init writes for a provisioned one, then runs the same steps. The node's name is the
// machine's short host name unless LEXICON_NAME is set when it runs.
func InstallScript(p UserDataParams) (string, error) {
	in, err := prepare(p)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# Lexicon: install the agent and join the fleet. Run as root.\nset -eu\n")
	b.WriteString("name=\"${LEXICON_NAME:-$(hostname -s)}\"\n")
	for _, f := range in.files {
		dir := f.Path[:strings.LastIndex(f.Path, "/")]
		fmt.Fprintf(&b, "mkdir -p %s\n(umask 077; printf '%%s' %s > %s)\nchmod %s %s\nchown %s %s\n", dir, shellQuote(f.Content), f.Path,
			f.Permissions, f.Path, f.Owner, f.Path)
	}
	b.WriteString(strings.Join(installSteps(in.base, p.Platform, p.Digest, in.curlCA, in.joinCA, "\"$name\""), "\n"))
	b.WriteString("\n")
	return b.String(), nil
}

// shellQuote is s as one single-quoted shell word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// OneLine wraps a script as one command to paste: the script travels base64-encoded, so no character
// of it meets the shell the person pastes into.
func OneLine(script string) string {
	return "echo " + base64.StdEncoding.EncodeToString([]byte(script)) + " | base64 -d | sh"
}

// InstallCommand mints an enrolment (a one-time token whose join is approved at once, or left for a
// person) and answers the command that installs the agent with it. It needs admin: the join it makes
// needs no person.
func (r *Room) InstallCommand(ctx context.Context, who api.Token, req api.InstallCommandRequest) (api.InstallCommand, error) {
	if err := tokens.Need(who, api.NodesInstallCommand.Role); err != nil {
		return api.InstallCommand{}, err
	}
	if r.c.Bootstrap == nil {
		return api.InstallCommand{}, errcode.New(errcode.UsageInvalid, "this plane was started without what an install needs (its URL and trust folder)")
	}
	expiry := DefaultInstallExpiry
	if req.ExpiresIn != "" {
		d, err := time.ParseDuration(req.ExpiresIn)
		if err != nil || d <= 0 || d > MaxInstallExpiry {
			return api.InstallCommand{}, errcode.New(errcode.UsageInvalid, "expires_in %q is not a duration up to %s", req.ExpiresIn, MaxInstallExpiry).
				With(errcode.DetailField, "expires_in")
		}
		expiry = d
	}
	platform := req.Platform
	if platform == "" {
		platform = "linux-amd64"
	}
	if !platformRE.MatchString(platform) {
		return api.InstallCommand{}, errcode.New(errcode.UsageInvalid, "platform %q is not os-arch", platform).With(errcode.DetailField, "platform")
	}
	approve := req.Approve == nil || *req.Approve
	digest, err := agentDigest(ctx, r.c.Store, platform)
	if err != nil {
		return api.InstallCommand{}, err
	}
	token := newToken()
	now := r.c.Now()
	script, err := InstallScript(UserDataParams{Bootstrap: r.c.Bootstrap(), Platform: platform, Digest: digest, Token: token})
	if err != nil {
		return api.InstallCommand{}, err
	}
	en, err := r.c.Store.EnrolmentCreate(ctx, store.EnrolmentCreateParams{TokenHash: TokenHash(token), Labels: req.Labels, Approve: approve,
		ExpiresAt: now.Add(expiry), By: who.Name, Now: now})
	if err != nil {
		return api.InstallCommand{}, err
	}
	r.log.Info("install command made", "enrolment", en.ID, "approve", approve, "expires_at", en.ExpiresAt, "by", who.Name)
	return api.InstallCommand{ID: en.ID, Command: OneLine(script), Approve: approve, ExpiresAt: en.ExpiresAt, AgentDigest: digest}, nil
}
