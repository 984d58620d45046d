package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/agent"
	"github.com/lexicon-fleet/lexicon/agent/internal/client"
	"github.com/lexicon-fleet/lexicon/agent/internal/state"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type joinResult struct {
	state.Pairing
	Name    string `json:"name"`
	PubFile string `json:"pub_file"`
}

func (r joinResult) Text(w io.Writer) {
	fmt.Fprintf(w, "join %s: %s\n", r.JoinID, r.Status)
	if r.NodeID != "" {
		fmt.Fprintf(w, "node %s\n", r.NodeID)
	}
}

func joinCmd() *cli.Command {
	var d dirs
	var plane, name, ca, token, tokenFile string
	var noWait bool
	var wait time.Duration
	return &cli.Command{
		Path: "join", Args: "--plane URL [--name N] [--ca FILE] [--token-file FILE] [--no-wait]", MaxArgs: 0,
		Summary: "ask a plane to pair with this machine; an admin approves after comparing the fingerprint",
		Setup: func(fs *flag.FlagSet) {
			d.setup(fs)
			fs.StringVar(&plane, "plane", "", "plane URL, https://host:port (required)")
			fs.StringVar(&name, "name", "", "the name this machine asks for (default: its host name)")
			fs.StringVar(&ca, "ca", "", "the plane's CA certificate, when the plane minted its own")
			fs.StringVar(&token, "token", "", "the one-time token of the provisioning that made this machine (prefer --token-file: a command line is visible to every process)")
			fs.StringVar(&tokenFile, "token-file", "", "a file holding the provisioning's one-time token")
			fs.BoolVar(&noWait, "no-wait", false, "return once the request is made; lexicon-agent status shows the outcome")
			fs.DurationVar(&wait, "wait", time.Hour, "how long to wait for an admin's decision")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			if agent.TestFault == "nojoin" {
				return nil, nil
			}
			if plane == "" {
				return nil, cli.UsageError("join needs --plane URL")
			}
			if token != "" && tokenFile != "" {
				return nil, cli.UsageError("give --token or --token-file, not both")
			}
			if tokenFile != "" {
				data, err := os.ReadFile(tokenFile)
				if err != nil {
					return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", tokenFile)
				}
				token = strings.TrimSpace(string(data))
			}
			sd, err := d.open()
			if err != nil {
				return nil, err
			}
			if name == "" {
				name, _ = os.Hostname()
			}
			if ca != "" {
				// Keep a copy: the pairing must not depend on a file elsewhere staying put.
				data, err := os.ReadFile(ca)
				if err != nil {
					return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", ca)
				}
				ca = filepath.Join(string(sd), "plane-ca.crt")
				if err := os.WriteFile(ca, data, 0o644); err != nil {
					return nil, errcode.Wrap(err, errcode.IOFailed, "cannot write %s", ca)
				}
			}
			key, _, err := sd.Key()
			if err != nil {
				return nil, err
			}
			c, err := client.New(plane, ca, key)
			if err != nil {
				return nil, err
			}
			resp, err := c.Join(ctx, channel.JoinRequest{Name: name, Key: key.Public().String(), Addresses: addresses(), AgentVersion: agent.Version, Token: token})
			if err != nil {
				return nil, err
			}
			p := state.Pairing{Plane: plane, CA: ca, JoinID: resp.JoinID, Fingerprint: resp.Fingerprint, Status: resp.Status}
			if p.Fingerprint != key.Public().Fingerprint() {
				return nil, errcode.New(errcode.PlaneUnexpected, "the plane shows fingerprint %s for this key, which is %s: do not approve this join", p.Fingerprint, key.Public().Fingerprint())
			}
			if err := sd.SavePairing(p); err != nil {
				return nil, err
			}
			env.Progressf("asked %s to pair as %q", plane, name)
			env.Progressf("key fingerprint %s", p.Fingerprint)
			env.Progressf("an admin approves with: lexicon joins approve %s --fingerprint %s", p.JoinID, p.Fingerprint)
			res := joinResult{Pairing: p, Name: name, PubFile: sd.PubFile()}
			if noWait {
				return res, nil
			}
			p, err = waitDecision(ctx, env, c, sd, p, wait)
			res.Pairing = p
			return res, err
		},
	}
}

// waitDecision polls the join until an admin decides, renewing the request as it asks.
func waitDecision(ctx context.Context, env *cli.Env, c *client.Client, sd state.Dir, p state.Pairing, wait time.Duration) (state.Pairing, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for try := 0; ; try++ {
		next, err := decide(ctx, c, sd, p)
		if err != nil || next.Status != channel.JoinPending {
			return next, err
		}
		select {
		case <-ctx.Done():
			return p, errcode.Wrap(ctx.Err(), errcode.AgentNotJoined, "no decision yet; lexicon-agent status shows it when it comes")
		case <-time.After(decisionPoll(try)):
		}
	}
}

// decisionPoll is the pause after the try'th pending answer: 25 ms, doubling to a second. A
// provisioned machine's join is decided by the provider check within a few tens of milliseconds of
// asking (about 20 ms on the netns cloud), and the first pause is time its agent has not started; a
// person takes minutes, for which a poll a second is plenty. The first second costs five polls, well
// inside the join's rate budget (a burst of 20 per address).
func decisionPoll(try int) time.Duration {
	return min(25*time.Millisecond<<min(try, 6), time.Second)
}

// decide asks the plane once and records the answer. A rejected key is retired here, so the next join
// makes a fresh one.
func decide(ctx context.Context, c *client.Client, sd state.Dir, p state.Pairing) (state.Pairing, error) {
	st, err := c.JoinStatus(ctx, p.JoinID)
	if err != nil {
		return p, err
	}
	p.Status, p.NodeID = st.Status, st.NodeID
	switch st.Status {
	case channel.JoinRejected:
		if err := sd.RetireKey(); err != nil {
			return p, err
		}
		return p, errcode.New(errcode.AgentJoinRejected, "the plane rejected this key; it is retired, and the next join makes a fresh one")
	case channel.JoinExpired:
		return p, errcode.New(errcode.JoinExpired, "the join request expired before anyone decided; run join again")
	}
	return p, sd.SavePairing(p)
}

// addresses lists this machine's non-loopback IP addresses, for the admin to compare.
func addresses() []string {
	var out []string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() && len(out) < 16 {
			out = append(out, ipn.IP.String())
		}
	}
	return out
}
