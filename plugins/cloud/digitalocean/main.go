// Command lexicon-driver-cloud-digitalocean is the cloud driver for DigitalOcean, on godo with a
// personal access token (read and write).
package main

import "github.com/lexicon-fleet/lexicon/sdk/driver/cloud"

func main() { cloud.Serve(&Driver{}) }
