// Command lexicon-driver-cloud-hetzner is the cloud driver for Hetzner Cloud, on hcloud-go with a
// project API token (read and write).
package main

import "github.com/lexicon-fleet/lexicon/sdk/driver/cloud"

func main() { cloud.Serve(&Driver{}) }
