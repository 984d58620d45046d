package cloud

import (
	"net/netip"
	"time"

	cloudpb "github.com/lexicon-fleet/lexicon/sdk/driver/cloud/proto"
)

// Conversions between the Go contract and its wire form, shared by client.go and server.go.

func instanceToPB(in Instance) *cloudpb.Instance {
	out := &cloudpb.Instance{
		Id: in.ID, Label: in.Label, Region: in.Region, Type: in.Type, Image: in.Image,
		Status: string(in.Status), Tags: in.Tags,
	}
	for _, a := range in.IPv4 {
		out.Ipv4 = append(out.Ipv4, a.String())
	}
	for _, a := range in.IPv6 {
		out.Ipv6 = append(out.Ipv6, a.String())
	}
	if !in.Created.IsZero() {
		out.CreatedUnix = in.Created.Unix()
	}
	return out
}

func instanceFromPB(in *cloudpb.Instance) Instance {
	out := Instance{
		ID: in.GetId(), Label: in.GetLabel(), Region: in.GetRegion(), Type: in.GetType(),
		Image: in.GetImage(), Status: Status(in.GetStatus()), Tags: in.GetTags(),
		IPv4: parseAddrs(in.GetIpv4()), IPv6: parseAddrs(in.GetIpv6()),
	}
	if in.GetCreatedUnix() != 0 {
		out.Created = time.Unix(in.GetCreatedUnix(), 0).UTC()
	}
	return out
}

// parseAddrs keeps the addresses that parse; a driver cannot make the host hold a malformed one.
func parseAddrs(list []string) []netip.Addr {
	var out []netip.Addr
	for _, s := range list {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, a)
		}
	}
	return out
}

func createToPB(r CreateRequest) *cloudpb.CreateInstanceRequest {
	return &cloudpb.CreateInstanceRequest{
		Region: r.Region, Type: r.Type, Image: r.Image, Label: r.Label, Tags: r.Tags,
		SshKeys: r.SSHKeys, UserData: r.UserData, DiskEncryption: string(r.DiskEncryption),
	}
}

func createFromPB(r *cloudpb.CreateInstanceRequest) CreateRequest {
	return CreateRequest{
		Region: r.GetRegion(), Type: r.GetType(), Image: r.GetImage(), Label: r.GetLabel(),
		Tags: r.GetTags(), SSHKeys: r.GetSshKeys(), UserData: r.GetUserData(),
		DiskEncryption: DiskEncryption(r.GetDiskEncryption()),
	}
}
