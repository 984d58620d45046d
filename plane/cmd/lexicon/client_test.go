package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// tlsPlane serves the fleet's plane over TLS on loopback, as lexicon-plane serve does, and returns its
// URL and a file holding the CA that signed its certificate.
func tlsPlane(t *testing.T, f *fleet) (string, string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(wire.New(wire.Config{Store: f.st}).Handler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes this test makes fail on purpose
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, writeCert(t, srv)
}

func writeCert(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// anotherCA writes the certificate of a CA that signed nothing the plane serves.
func anotherCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "other-ca.crt")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// lexiconEnv runs the CLI with -o json and exactly the environment given (LEXICON_*), returning its
// exit status and error envelope.
func lexiconEnv(t *testing.T, env map[string]string, args ...string) (int, map[string]any, string) {
	t.Helper()
	for _, k := range []string{"LEXICON_PLANE", "LEXICON_CA", "LEXICON_TOKEN", "LEXICON_TOKEN_FILE"} {
		t.Setenv(k, env[k])
	}
	var out, errOut bytes.Buffer
	code := cli.Run(t.Context(), "lexicon", "", commands(), append(args, "-o", "json"), &out, &errOut)
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: not JSON: %v\n%s\n%s", args, err, out.String(), errOut.String())
	}
	return code, got, errOut.String()
}

// TestClientSaysWhatWentWrong: the plane refusing the token, a certificate that does not verify, and
// plain HTTP are each told as what they are, naming what to change, rather than as a missing token
// or an unreachable plane.
func TestClientSaysWhatWentWrong(t *testing.T) {
	f := newFleet(t)
	url, ca := tlsPlane(t, f)
	otherCA := anotherCA(t)
	unknownFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(unknownFile, []byte("lxt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := map[string]string{"LEXICON_PLANE": url, "LEXICON_CA": ca, "LEXICON_TOKEN": f.token}
	with := func(k, v string) map[string]string {
		env := map[string]string{}
		for k, v := range good {
			env[k] = v
		}
		env[k] = v
		return env
	}
	if code, got, _ := lexiconEnv(t, good, "whoami"); code != 0 || got["name"] != "ops" {
		t.Fatalf("whoami with a good token and CA: %d %v", code, got)
	}
	for _, tc := range []struct {
		name   string
		env    map[string]string
		args   []string
		status int
		code   string
		says   []string
	}{
		{"a token that is not one", with("LEXICON_TOKEN", "bogus"), nil, 1, errcode.AuthRequired,
			[]string{"the plane refused the token in LEXICON_TOKEN", "lexicon-plane token create"}},
		{"an unknown token in a file", with("LEXICON_TOKEN_FILE", unknownFile), nil, 1, errcode.AuthRequired,
			[]string{"the plane refused the token in " + unknownFile}},
		{"another CA", with("LEXICON_CA", otherCA), nil, 1, errcode.PlaneUntrusted,
			[]string{"did not verify against the CA in " + otherCA, "another CA signed it"}},
		{"the system's CAs", with("LEXICON_CA", ""), nil, 1, errcode.PlaneUntrusted,
			[]string{"did not verify against the system's CAs", "--ca"}},
		{"a name the certificate lacks", with("LEXICON_PLANE", strings.Replace(url, "127.0.0.1", "localhost", 1)), nil, 1, errcode.PlaneUntrusted,
			[]string{"certificate is not for the host", "--tls-names"}},
		{"plain HTTP to the HTTPS plane", with("LEXICON_PLANE", strings.Replace(url, "https:", "http:", 1)), nil, 2, errcode.UsageInvalid,
			[]string{"speaks HTTPS: use " + url}},
		{"plain HTTP off loopback", with("LEXICON_PLANE", "http://192.0.2.1:8443"), nil, 2, errcode.UsageInvalid,
			[]string{"the plane speaks HTTPS: use https://192.0.2.1:8443", "never sent in the clear"}},
		{"no scheme", with("LEXICON_PLANE", "plane.example:8443"), nil, 2, errcode.UsageInvalid,
			[]string{"is not https://HOST[:PORT]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, got, _ := lexiconEnv(t, tc.env, append([]string{"whoami"}, tc.args...)...)
			msg, _ := got["message"].(string)
			if code != tc.status || got["code"] != tc.code {
				t.Fatalf("exit %d %v, want %d %s", code, got, tc.status, tc.code)
			}
			for _, s := range tc.says {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q lacks %q", msg, s)
				}
			}
			if strings.Contains(msg, "send Authorization") || strings.Contains(msg, tc.env["LEXICON_TOKEN"]) && tc.env["LEXICON_TOKEN"] != "" {
				t.Errorf("message %q asks for a token that was sent, or shows it", msg)
			}
		})
	}
}

// TestAnswerOfAnotherShape: an answer the CLI cannot decode (a plane of another version) is told in
// JSON's words, not with the Go types the CLI decodes into.
func TestAnswerOfAnotherShape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id": "token_1", "name": 5, "role": "admin"}`))
	}))
	defer srv.Close()
	code, got, _ := lexiconEnv(t, map[string]string{"LEXICON_PLANE": srv.URL, "LEXICON_TOKEN": "lxt_x"}, "whoami")
	msg, _ := got["message"].(string)
	if code != 1 || got["code"] != errcode.PlaneUnexpected || !strings.Contains(msg, "name must be a string, not a number") ||
		strings.Contains(msg, "Go ") || strings.Contains(msg, "api.") {
		t.Fatalf("exit %d %v", code, got)
	}
}
