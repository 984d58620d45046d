package main

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

func TestCovers(t *testing.T) {
	c := word.Certificate{DNSNames: []string{"example.test", "*.example.test"}, IPAddresses: []string{"192.0.2.1"}}
	for host, want := range map[string]bool{
		"example.test": true, "shop.example.test": true, "SHOP.Example.Test.": true, "a.b.example.test": false,
		"example.org": false, "192.0.2.1": true, "192.0.2.2": false,
	} {
		if got := covers(c, host); got != want {
			t.Errorf("covers(%q) = %v", host, got)
		}
	}
}
