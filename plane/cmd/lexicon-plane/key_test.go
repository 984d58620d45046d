package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestMain lets a test run this binary as lexicon-plane itself, so that it can SIGKILL a real process.
func TestMain(m *testing.M) {
	if os.Getenv("LEXICON_PLANE_TEST_AS_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// plantAccounts seals n account credentials under the key at keyFile.
func plantAccounts(t *testing.T, dir string, n int) (string, map[string]string) {
	t.Helper()
	key, err := seal.LoadOrCreate(filepath.Join(dir, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := open.SQLite(t.Context(), filepath.Join(dir, "plane.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	want := map[string]string{}
	for i := range n {
		name, cred := fmt.Sprintf("acct-%02d", i), fmt.Sprintf("credential-%d", i)
		if _, err := st.AccountCreate(t.Context(), store.AccountCreateParams{Name: name, Driver: "dns-memory", Settings: json.RawMessage(`{}`),
			Sealed: key.Seal([]byte(cred), seal.AccountContext(name, "dns-memory")), KeyID: key.ID(), By: "root"}); err != nil {
			t.Fatal(err)
		}
		want[name] = cred
	}
	return key.ID(), want
}

// allUnderCurrent asserts every account opens under the key master.key holds, and only .prev is beside it.
func allUnderCurrent(t *testing.T, dir, from string, want map[string]string) {
	t.Helper()
	cur, err := seal.Load(filepath.Join(dir, "master.key"))
	if err != nil || cur.ID() == from {
		t.Fatalf("master.key after the rotation: %v %v", cur, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "master.key.next")); !os.IsNotExist(err) {
		t.Fatalf("master.key.next left behind: %v", err)
	}
	st, err := open.SQLite(t.Context(), filepath.Join(dir, "plane.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for name, cred := range want {
		a, err := st.AccountGet(t.Context(), store.AccountGetParams{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := cur.OpenAs(a.Sealed, seal.AccountContext(name, "dns-memory"), a.KeyID)
		if err != nil || string(plain) != cred {
			t.Fatalf("account %s after the rotation: %q %v", name, plain, err)
		}
	}
}

// TestKeyRotateCommand: `lexicon-plane key rotate -o json` rotates and says from and to which key;
// --help answers; a bad --batch is usage.invalid with a non-zero exit.
func TestKeyRotateCommand(t *testing.T) {
	dir := t.TempDir()
	from, want := plantAccounts(t, dir, 3)
	code, out, errOut := runPlane(t, "key", "rotate", "--data", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("key rotate: %d %s", code, errOut)
	}
	var res rotateResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.From != from || res.To == from || res.Resealed != 3 || res.Resumed {
		t.Fatalf("key rotate -o json: %s (%v)", out, err)
	}
	if !strings.Contains(errOut, "account: 3 re-sealed so far") {
		t.Fatalf("no progress on stderr: %q", errOut)
	}
	allUnderCurrent(t, dir, from, want)
	if code, out, _ := runPlane(t, "key", "rotate", "--help"); code != 0 || !strings.Contains(out+errOut, "master-key") {
		t.Fatalf("--help: %d %s", code, out)
	}
	code, out, errOut = runPlane(t, "key", "rotate", "--data", dir, "--batch", "0", "-o", "json")
	if code == 0 || !strings.Contains(out+errOut, "usage.invalid") {
		t.Fatalf("--batch 0: %d %s %s", code, out, errOut)
	}
}

// TestKeyRotateSurvivesSIGKILL kills a real lexicon-plane process once it has re-sealed a first batch,
// then runs the command again: it finishes, and every credential opens under the new key.
func TestKeyRotateSurvivesSIGKILL(t *testing.T) {
	dir := t.TempDir()
	from, want := plantAccounts(t, dir, 40)
	var stderr testkit.Buffer
	cmd := exec.Command(os.Args[0], "key", "rotate", "--data", dir, "--batch", "1")
	cmd.Env = append(os.Environ(), "LEXICON_PLANE_TEST_AS_MAIN=1")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stderr.WaitFor(t, "re-sealed so far")
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	code, out, errOut := runPlane(t, "key", "rotate", "--data", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("key rotate after the kill: %d %s", code, errOut)
	}
	var res rotateResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Resumed && res.From != from {
		t.Fatalf("resumed from %s, not %s", res.From, from)
	}
	allUnderCurrent(t, dir, from, want)
}
