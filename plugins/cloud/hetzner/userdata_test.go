package main

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/lexicon-fleet/lexicon/plugins/cloud/hetzner/hetznerfake"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

const userData = "#cloud-config\nwrite_files:\n  - path: /etc/lexicon/join\n    content: \"token-1 ü\"\nruncmd:\n  - [systemctl, start, lexicon-agent]\n"

// Hetzner takes user data as text in user_data and tags as the keys of the labels map; the fake keeps
// what it was sent, and a label Hetzner refuses is cloud.invalid.
func TestCreateCarriesUserDataAndLabels(t *testing.T) {
	f, url := hetznerfake.New(t, token)
	d := configured(t, url)
	ctx := context.Background()
	in, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "fsn1", Type: "cx22", Image: "debian-12", Label: "prov-1",
		Tags: []string{"lexicon-prov-1", "blue"}, UserData: userData})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := strconv.ParseInt(in.ID, 10, 64)
	f.Mu.Lock()
	got := *f.Servers[id]
	f.Mu.Unlock()
	if got.UserData != userData || !maps.Equal(got.Labels, map[string]string{"lexicon-prov-1": "", "blue": ""}) {
		t.Fatalf("Hetzner received user data %q, labels %v", got.UserData, got.Labels)
	}
	back, err := d.GetInstance(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Tags, []string{"blue", "lexicon-prov-1"}) {
		t.Fatalf("read back tags %v", back.Tags)
	}
	// A label name ends with a letter or digit at Hetzner; the contract's tags may end with '-'.
	_, err = d.CreateInstance(ctx, cloud.CreateRequest{Region: "fsn1", Type: "cx22", Image: "debian-12", Label: "prov-2", Tags: []string{"prov-"}})
	testkit.WantCode(t, err, errcode.CloudInvalid)
}
