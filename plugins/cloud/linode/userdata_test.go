package main

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/lexicon-fleet/lexicon/plugins/cloud/linode/linodefake"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// cloud-init user data as provisioning writes it: several lines, quotes, a non-ASCII byte.
const userData = "#cloud-config\nwrite_files:\n  - path: /etc/lexicon/join\n    content: \"token-1 ü\"\nruncmd:\n  - [systemctl, start, lexicon-agent]\n"

// Linode takes user data base64 in metadata.user_data and tags as a list; the fake decodes and keeps
// what it was sent, as Linode would, and a tag Linode refuses is cloud.invalid.
func TestCreateCarriesUserDataAndTags(t *testing.T) {
	f, url := linodefake.New(t, token)
	d := configured(t, url)
	ctx := context.Background()
	in, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "us-east", Type: "g6-nanode-1", Image: "linode/debian12", Label: "prov-1",
		Tags: []string{"lexicon-prov-1", "blue"}, UserData: userData})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := strconv.Atoi(in.ID)
	f.Mu.Lock()
	got := *f.Instances[id]
	f.Mu.Unlock()
	if !got.HasUserData || got.UserData != userData || !slices.Equal(got.Tags, []string{"lexicon-prov-1", "blue"}) {
		t.Fatalf("Linode received user data %q, tags %v", got.UserData, got.Tags)
	}
	back, err := d.GetInstance(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(back.Tags, "lexicon-prov-1") {
		t.Fatalf("read back tags %v", back.Tags)
	}
	_, err = d.CreateInstance(ctx, cloud.CreateRequest{Region: "us-east", Type: "g6-nanode-1", Image: "linode/debian12", Label: "prov-2", Tags: []string{"ab"}})
	testkit.WantCode(t, err, errcode.CloudInvalid)
}
