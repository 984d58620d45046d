// Command lexicon-driver-cloud-linode is the cloud driver for Linode (Akamai Cloud), on linodego with a
// personal access token (Linodes, IPs and Account read/write).
package main

import "github.com/lexicon-fleet/lexicon/sdk/driver/cloud"

func main() { cloud.Serve(&Driver{}) }
