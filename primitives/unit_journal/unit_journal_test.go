package main_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/unit_journal.wasm"

type journal struct {
	Known bool
	Lines []struct {
		Priority int
		Message  string
	}
}

func TestLastLines(t *testing.T) {
	fake := wordtest.NewFakeSystemd(map[string]string{"nginx.service": "ActiveState=active\n"})
	var entries []word.JournalEntry
	start := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for i := range 30 {
		entries = append(entries, word.JournalEntry{Time: start.Add(time.Duration(i) * time.Second), Priority: 6, Message: fmt.Sprintf("request %d", i)})
	}
	fake.SetJournal("nginx.service", entries)
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSystemd(fake))
	var j journal
	w.Must(map[string]any{"unit": "nginx.service", "lines": 3}, &j)
	if !j.Known || len(j.Lines) != 3 || j.Lines[0].Message != "request 27" || j.Lines[2].Message != "request 29" {
		t.Fatalf("%+v", j)
	}
	if res := w.Run(map[string]any{"unit": "sshd-keygen.service"}); res.Code != errcode.CapabilityDenied {
		t.Fatalf("unit off the allow-list: %s", res.Code)
	}
}

func TestUnknownWithoutSystemd(t *testing.T) {
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithoutSystemd())
	var j journal
	w.Must(map[string]any{"unit": "nginx.service"}, &j)
	if j.Known || len(j.Lines) != 0 {
		t.Fatalf("%+v", j)
	}
}
