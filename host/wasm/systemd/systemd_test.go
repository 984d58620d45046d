package systemd_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm/systemd"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseShow(t *testing.T) {
	u := systemd.UnitFromProperties("nginx.service", systemd.ParseShow(read(t, "show-nginx-failed.txt")))
	want := capv1.Unit{Name: "nginx.service", Description: "A high performance web server and a reverse proxy server",
		LoadState: "loaded", ActiveState: "failed", SubState: "failed", Result: "exit-code", ExecMainStatus: 1,
		ExecMainCode: "exited", ActiveEnter: "Sun 2026-11-29 22:03:11 UTC", UnitFileState: "enabled", Restart: "on-failure"}
	if u != want {
		t.Fatalf("%+v", u)
	}
}

func TestParseListUnits(t *testing.T) {
	if got := strings.Join(systemd.ParseListUnits(read(t, "list-units-failed.txt")), ","); got != "certbot.service,nginx.service" {
		t.Fatalf("%q", got)
	}
}

func TestParseJournal(t *testing.T) {
	e, err := systemd.ParseJournalJSON([]byte(read(t, "journal.json")))
	if err != nil || len(e) != 3 {
		t.Fatalf("%v %+v", err, e)
	}
	if e[1].Priority != 3 || !strings.Contains(e[1].Message, "bind()") || !e[0].Time.Equal(time.UnixMicro(1796076191000000)) {
		t.Fatalf("%+v", e[1])
	}
	if e[2].Message != "hi\uFFFD\n" {
		t.Fatalf("byte-array message %q", e[2].Message)
	}
	if _, err := systemd.ParseJournalJSON([]byte("not json\n")); err == nil {
		t.Fatal("garbage parsed")
	}
}

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{"nginx.service": true, "getty@tty1.service": true, "-H": false,
		"a b.service": false, "x;reboot": false, "": false, "../x": false} {
		if systemd.ValidName(name) != ok {
			t.Errorf("ValidName(%q) != %v", name, ok)
		}
	}
}

func FuzzParseJournal(f *testing.F) {
	f.Add([]byte(`{"MESSAGE":"x","PRIORITY":"3","__REALTIME_TIMESTAMP":"1"}`))
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = systemd.ParseJournalJSON(b) })
}
