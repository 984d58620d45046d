package keyrotate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/keyrotate"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var stores = map[string]func(testing.TB) storetest.Env{"SQLite": storetest.SQLiteOpener, "Postgres": storetest.PostgresOpener}

// plant fills st with sealed values of every kind under the master key at keyFile, more than one
// batch of each.
func plant(t *testing.T, st store.Store, keyFile string) map[string]string {
	t.Helper()
	key, err := seal.Load(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range 5 {
		name, secret := fmt.Sprintf("acct-%d", i), fmt.Sprintf("credential-%d", i)
		if _, err := st.AccountCreate(t.Context(), store.AccountCreateParams{Name: name, Driver: "dns-rfc2136", Settings: json.RawMessage(`{}`),
			Sealed: key.Seal([]byte(secret), seal.AccountContext(name, "dns-rfc2136")), KeyID: key.ID(), By: "alice"}); err != nil {
			t.Fatal(err)
		}
		want["account "+name] = secret
	}
	for i := range 3 {
		name, secret := fmt.Sprintf("b%d", i), fmt.Sprintf("s3-secret-%d", i)
		if _, err := st.BackupTargetCreate(t.Context(), store.BackupTargetCreateParams{Target: store.BackupTarget{Name: name,
			Endpoint: "http://127.0.0.1:7070", Region: "us-east-1", Bucket: "b", AccessKeyID: "AKID", Recovery: "age1recovery",
			Sealed: key.Seal([]byte(secret), seal.BackupTargetContext(name)), KeyID: key.ID(), CreatedBy: "admin"}}); err != nil {
			t.Fatal(err)
		}
		want["target "+name] = secret
	}
	for i := range 3 {
		id, secret := fmt.Sprintf("%064x", i+1), fmt.Sprintf("refresh-%d", i)
		if _, err := st.SSOSessionCreate(t.Context(), store.SSOSessionCreateParams{IDHash: id, Subject: "sub", Name: "ada", Role: store.RoleViewer,
			CSRF: fmt.Sprintf("%043d", i), RefreshSealed: key.Seal([]byte(secret), seal.SSORefreshContext(id)),
			RefreshAt: time.Now().Add(time.Hour), ExpiresAt: time.Now().Add(2 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		want["session "+id] = secret
	}
	return want
}

// check asserts that every planted value opens, under the key master.key now holds and no other, that
// no .next file is left, and that .prev holds the key rotated from.
func check(t *testing.T, st store.Store, keyFile, from string, want map[string]string) {
	t.Helper()
	cur, err := seal.Load(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if cur.ID() == from {
		t.Fatalf("master.key still holds %s", from)
	}
	if _, err := os.Lstat(keyFile + seal.NextSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s left behind: %v", keyFile+seal.NextSuffix, err)
	}
	if prev, err := seal.Load(keyFile + seal.PrevSuffix); err != nil || prev.ID() == cur.ID() {
		t.Fatalf("%s: %v, %v", keyFile+seal.PrevSuffix, prev, err)
	}
	got := map[string]string{}
	for _, a := range mustList(t, st, store.SealedAccount) {
		if a.KeyID != cur.ID() {
			t.Fatalf("account %s is under %s, not %s", a.Name, a.KeyID, cur.ID())
		}
		plain, err := cur.Open(a.Sealed, seal.AccountContext(a.Name, a.Driver))
		if err != nil {
			t.Fatalf("account %s: %v", a.Name, err)
		}
		got["account "+a.Name] = string(plain)
	}
	for _, v := range mustList(t, st, store.SealedBackupTarget) {
		if v.KeyID != cur.ID() {
			t.Fatalf("target %s is under %s, not %s", v.Name, v.KeyID, cur.ID())
		}
		plain, err := cur.Open(v.Sealed, seal.BackupTargetContext(v.Ref))
		if err != nil {
			t.Fatalf("target %s: %v", v.Ref, err)
		}
		got["target "+v.Ref] = string(plain)
	}
	for _, v := range mustList(t, st, store.SealedSSOSession) {
		plain, err := cur.Open(v.Sealed, seal.SSORefreshContext(v.Ref)) // the current key alone opens it
		if err != nil {
			t.Fatalf("session %s: %v", v.Ref, err)
		}
		got["session "+v.Ref] = string(plain)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the rotation:\n got %v\nwant %v", got, want)
	}
}

func mustList(t *testing.T, st store.Store, kind store.SealedKind) []store.SealedValue {
	t.Helper()
	out, err := st.SealedValueList(t.Context(), store.SealedValueListParams{Kind: kind, Limit: store.MaxSealedPage})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var errKilled = errors.New("killed")

// TestRotateResumesAfterAStopAtEveryStep stops a rotation after each of its steps (and after the
// first batch of the final sweep), as a kill there would, and runs it again: the rerun finishes,
// every value opens under the new key, and the key files are consistent.
func TestRotateResumesAfterAStopAtEveryStep(t *testing.T) {
	for name, opener := range stores {
		for _, stop := range []struct {
			step string
			nth  int
		}{{keyrotate.StepNextWritten, 1}, {keyrotate.StepBatch, 2}, {keyrotate.StepResealed, 1}, {keyrotate.StepPrevWritten, 1},
			{keyrotate.StepSwapped, 1}} {
			t.Run(fmt.Sprintf("%s/%s-%d", name, stop.step, stop.nth), func(t *testing.T) {
				st := opener(t).Store
				keyFile := filepath.Join(t.TempDir(), "data", "master.key")
				if _, err := seal.LoadOrCreate(keyFile); err != nil {
					t.Fatal(err)
				}
				from, _ := seal.Load(keyFile)
				want := plant(t, st, keyFile)
				seen := 0
				_, err := keyrotate.Rotate(t.Context(), keyrotate.Options{KeyFile: keyFile, Store: st, Batch: 2, Hook: func(step string) error {
					if step == stop.step {
						if seen++; seen == stop.nth {
							return errKilled
						}
					}
					return nil
				}})
				if !errors.Is(err, errKilled) {
					t.Fatalf("the first run ended with %v, not the stop", err)
				}
				res, err := keyrotate.Rotate(t.Context(), keyrotate.Options{KeyFile: keyFile, Store: st, Batch: 2})
				if err != nil {
					t.Fatal(err)
				}
				if stop.step != keyrotate.StepSwapped && (!res.Resumed || res.From != from.ID()) {
					t.Fatalf("the rerun did not resume the rotation from %s: %+v", from.ID(), res)
				}
				if stop.step == keyrotate.StepSwapped && res.Resumed {
					t.Fatalf("a rerun after the swap is a new rotation: %+v", res)
				}
				check(t, st, keyFile, from.ID(), want)
			})
		}
	}
}

// TestReplicaFollowsTheRotation: a replica that loaded only the old key before the rotation opens
// values re-sealed under the new key after the swap (it reads the key files again), and its next seal
// is under the new key.
func TestReplicaFollowsTheRotation(t *testing.T) {
	st := storetest.SQLiteOpener(t).Store
	keyFile := filepath.Join(t.TempDir(), "data", "master.key")
	replica, err := seal.OpenRing(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	old := replica.ID()
	want := plant(t, st, keyFile)
	res, err := keyrotate.Rotate(t.Context(), keyrotate.Options{KeyFile: keyFile, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if res.From != old || res.To == old || res.Resealed != len(want) || len(res.Unopenable) != 0 {
		t.Fatalf("rotation %+v", res)
	}
	check(t, st, keyFile, old, want)
	for _, a := range mustList(t, st, store.SealedAccount) {
		plain, err := replica.OpenAs(a.Sealed, seal.AccountContext(a.Name, a.Driver), a.KeyID)
		if err != nil || want["account "+a.Name] != string(plain) {
			t.Fatalf("the replica opened account %s as %q, %v", a.Name, plain, err)
		}
	}
	for _, v := range mustList(t, st, store.SealedSSOSession) {
		plain, err := replica.Open(v.Sealed, seal.SSORefreshContext(v.Ref))
		if err != nil || want["session "+v.Ref] != string(plain) {
			t.Fatalf("the replica opened session %s as %q, %v", v.Ref, plain, err)
		}
	}
	if _, id := replica.SealWithID([]byte("x"), nil); id != res.To {
		t.Fatalf("the replica seals under %s after the swap, not %s", id, res.To)
	}
	// A value a straggler sealed under the old key still opens (master.key.prev), and the next
	// rotation moves it.
	oldKey, _ := seal.Load(keyFile + seal.PrevSuffix)
	if _, err := replica.OpenAs(oldKey.Seal([]byte("late"), nil), nil, old); err != nil {
		t.Fatalf("a value under the previous key: %v", err)
	}
	// A key id no file holds is account.key_mismatch.
	_, err = replica.OpenAs([]byte("x"), nil, "00000000deadbeef")
	testkit.WantCode(t, err, errcode.AccountKeyMismatch)
}

// TestRotateRefusesAnUntrustedNextKey: a master.key.next others can read is key.file_untrusted, and the
// rotation changes nothing.
func TestRotateRefusesAnUntrustedNextKey(t *testing.T) {
	st := storetest.SQLiteOpener(t).Store
	keyFile := filepath.Join(t.TempDir(), "data", "master.key")
	if _, err := seal.LoadOrCreate(keyFile); err != nil {
		t.Fatal(err)
	}
	want := plant(t, st, keyFile)
	if err := os.WriteFile(keyFile+seal.NextSuffix, []byte("lexicon-master-key-v1:AAAA\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := keyrotate.Rotate(context.Background(), keyrotate.Options{KeyFile: keyFile, Store: st})
	testkit.WantCode(t, err, errcode.KeyFileUntrusted)
	for _, a := range mustList(t, st, store.SealedAccount) {
		if want["account "+a.Name] == "" {
			t.Fatal("lost an account")
		}
	}
	k, _ := seal.Load(keyFile)
	for _, a := range mustList(t, st, store.SealedAccount) {
		if a.KeyID != k.ID() {
			t.Fatalf("a refused rotation re-sealed account %s", a.Name)
		}
	}
}

// TestRotateWhileAReplicaWrites: a replica holding the old key rewrites a session's refresh token
// (sealed under the old key) in the middle of the re-seal, after that row was moved: the rotation
// still ends with every value under the new key, the rewritten one included.
func TestRotateWhileAReplicaWrites(t *testing.T) {
	st := storetest.SQLiteOpener(t).Store
	keyFile := filepath.Join(t.TempDir(), "data", "master.key")
	replica, err := seal.OpenRing(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	from := replica.ID()
	old, _ := seal.Load(keyFile)
	want := plant(t, st, keyFile)
	sid := fmt.Sprintf("%064x", 1)
	wrote := false
	_, err = keyrotate.Rotate(t.Context(), keyrotate.Options{KeyFile: keyFile, Store: st, Batch: 2, Hook: func(step string) error {
		if step != keyrotate.StepResealed || wrote {
			return nil
		}
		wrote = true
		want["session "+sid] = "refresh-rewritten"
		return st.SSOSessionRefresh(t.Context(), store.SSOSessionRefreshParams{IDHash: sid, Name: "ada", Role: store.RoleViewer,
			RefreshSealed: old.Seal([]byte("refresh-rewritten"), seal.SSORefreshContext(sid)), RefreshAt: time.Now().Add(time.Hour)})
	}})
	if err != nil || !wrote {
		t.Fatalf("rotation: %v (replica wrote: %v)", err, wrote)
	}
	check(t, st, keyFile, from, want)
}
