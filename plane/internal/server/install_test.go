package server_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

var installTokenRE = regexp.MustCompile(`lxp_[A-Za-z0-9_-]{43}`)

// TestInstallCommand: an admin's install command is one line that decodes to a shell script sh
// accepts, which writes the trust folder, the policy and the CA and installs the agent the release
// pins, checked by its digest; its one-time token fetches that agent and joins, and the join is
// approved at once with the labels asked for, or left for a person when asked. The token works once,
// and neither the trail nor the log of changes holds it.
func TestInstallCommand(t *testing.T) {
	st := storetest.SQLiteOpener(t).Store
	boot := &provision.Bootstrap{PlaneURL: "https://plane.example:8443", CA: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		Trust: map[string]string{"statement_keys/pub-1.pub": "publisher key's text\n"}}
	p := &trustedPlane{plane: newPlaneOn(t, wire.Config{Bootstrap: boot}, st), tokens: map[store.Role]string{}}
	for _, role := range []store.Role{store.RoleOperator, store.RoleAdmin} {
		tok, hash := tokens.Mint()
		if _, err := st.TokenCreate(t.Context(), store.TokenCreateParams{Name: "tok-" + string(role), Role: role, Hash: hash}); err != nil {
			t.Fatal(err)
		}
		p.tokens[role] = tok
	}
	post := http.MethodPost
	body := func(req api.InstallCommandRequest) []byte { b, _ := json.Marshal(req); return b }
	p.want(http.StatusNotFound, errcode.ReleaseNotFound, store.RoleAdmin, post, "/nodes/install-command", nil, nil)
	agentBin := []byte("pretend agent")
	sum := sha256.Sum256(agentBin)
	digest := hex.EncodeToString(sum[:])
	if _, err := st.ReleasePut(t.Context(), store.ReleasePutParams{Sequence: 1, Version: "1.0.0", StatementDigest: strings.Repeat("a", 64),
		Bundle: []byte(`{}`), Artifacts: []store.ArtifactPut{{Name: "agent/linux-amd64", Digest: digest, Data: agentBin}}, By: "test"}); err != nil {
		t.Fatal(err)
	}
	p.want(http.StatusForbidden, errcode.AuthForbidden, store.RoleOperator, post, "/nodes/install-command", nil, nil)
	p.want(http.StatusBadRequest, errcode.UsageInvalid, store.RoleAdmin, post, "/nodes/install-command", body(api.InstallCommandRequest{ExpiresIn: "30d"}), nil)
	p.want(http.StatusNotFound, errcode.ArtifactNotPinned, store.RoleAdmin, post, "/nodes/install-command", body(api.InstallCommandRequest{Platform: "linux-riscv64"}), nil)

	var cmd api.InstallCommand
	p.want(http.StatusCreated, "", store.RoleAdmin, post, "/nodes/install-command",
		body(api.InstallCommandRequest{Labels: map[string]string{"tier": "web"}, ExpiresIn: "30m"}), &cmd)
	b64, ok := strings.CutPrefix(cmd.Command, "echo ")
	b64, ok2 := strings.CutSuffix(b64, " | base64 -d | sh")
	script, err := base64.StdEncoding.DecodeString(b64)
	if !ok || !ok2 || err != nil || strings.Contains(cmd.Command, "\n") || !cmd.Approve || cmd.AgentDigest != digest {
		t.Fatalf("the command %+v: %v", cmd, err)
	}
	for _, want := range []string{provision.ConfigDir + "/trust/statement_keys/pub-1.pub", provision.ConfigDir + "/policy.json", provision.CAFile,
		"echo '" + digest + "  '", "agent=linux-amd64", "--token-file " + provision.TokenFile, `--name "$name"`, "systemctl enable --now lexicon-agent"} {
		if !strings.Contains(string(script), want) {
			t.Errorf("the script lacks %q:\n%s", want, script)
		}
	}
	if out, err := exec.Command("sh", "-n", "-c", string(script)).CombinedOutput(); err != nil {
		t.Fatalf("sh refuses the script: %v\n%s", err, out)
	}
	token := installTokenRE.FindString(string(script))

	fetch := func(tok string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, p.url+channel.PathArtifact+"?agent=linux-amd64", nil)
		req.Header.Set("Authorization", provision.AuthScheme+" "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	if status, data := fetch(token); status != http.StatusOK || string(data) != string(agentBin) {
		t.Fatalf("the agent with the command's token: %d %s", status, data)
	}
	join := func(name, tok string) (int, string, channel.JoinResponse) {
		k := keys.NewNode().Public()
		b, _ := json.Marshal(channel.JoinRequest{Name: name, Key: k.String(), Token: tok})
		var resp channel.JoinResponse
		status, code := p.call(channel.PathJoin, b, keys.NodePrivate{}, &resp)
		return status, code, resp
	}
	status, code, jr := join("db-1", token)
	if status != http.StatusAccepted || jr.Status != string(store.JoinApproved) {
		t.Fatalf("join with the command's token: %d %s %+v", status, code, jr)
	}
	var node api.Node
	p.want(http.StatusOK, "", store.RoleOperator, http.MethodGet, "/nodes/db-1", nil, &node)
	if node.Labels["tier"] != "web" {
		t.Fatalf("the enrolled node %+v", node)
	}
	if status, code, _ := join("db-2", token); status != http.StatusConflict || code != errcode.ProvisionTokenUsed {
		t.Fatalf("the token again: %d %s", status, code)
	}
	if status, _ := fetch(token); status != http.StatusConflict {
		t.Fatalf("the agent with a spent token: %d", status)
	}

	no := false
	p.want(http.StatusCreated, "", store.RoleAdmin, post, "/nodes/install-command", body(api.InstallCommandRequest{Approve: &no}), &cmd)
	b64 = strings.TrimSuffix(strings.TrimPrefix(cmd.Command, "echo "), " | base64 -d | sh")
	script, _ = base64.StdEncoding.DecodeString(b64)
	if status, code, jr := join("db-3", installTokenRE.FindString(string(script))); status != http.StatusAccepted || jr.Status != string(store.JoinPending) {
		t.Fatalf("a join left for a person: %d %s %+v", status, code, jr)
	}

	trail, err := st.AuditEventList(t.Context(), store.AuditEventListParams{Operation: api.NodesInstallCommand.OperationID(), Outcome: store.CodeOK})
	if err != nil || len(trail.Events) != 2 || !strings.HasPrefix(trail.Events[0].Target, "enrol_") {
		t.Fatalf("the trail %v %+v", err, trail.Events)
	}
	if b, _ := json.Marshal(trail); strings.Contains(string(b), token) || strings.Contains(string(b), "lxp_") {
		t.Fatalf("the trail holds a token: %s", b)
	}
}
