package main

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/lexicon-fleet/lexicon/plugins/cloud/digitalocean/digitaloceanfake"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
)

const userData = "#cloud-config\nwrite_files:\n  - path: /etc/lexicon/join\n    content: \"token-1 ü\"\nruncmd:\n  - [systemctl, start, lexicon-agent]\n"

// DigitalOcean takes user data as text in user_data and tags as a list; the fake keeps what it was
// sent.
func TestCreateCarriesUserDataAndTags(t *testing.T) {
	f, url := digitaloceanfake.New(t, token)
	d := configured(t, url)
	ctx := context.Background()
	in, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "nyc3", Type: "s-1vcpu-1gb", Image: "debian-12-x64", Label: "prov-1",
		Tags: []string{"lexicon-prov-1", "blue"}, UserData: userData})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := strconv.Atoi(in.ID)
	f.Mu.Lock()
	got := *f.Droplets[id]
	f.Mu.Unlock()
	if got.UserData != userData || !slices.Equal(got.Tags, []string{"lexicon-prov-1", "blue"}) {
		t.Fatalf("DigitalOcean received user data %q, tags %v", got.UserData, got.Tags)
	}
	back, err := d.GetInstance(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(back.Tags, "lexicon-prov-1") {
		t.Fatalf("read back tags %v", back.Tags)
	}
}
