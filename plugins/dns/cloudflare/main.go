// Command lexicon-driver-dns-cloudflare is the DNS driver for Cloudflare, over its REST API v4 with an
// API token (Zone:Read and DNS:Edit on the zones the account may change).
package main

import "github.com/lexicon-fleet/lexicon/sdk/driver/dns"

func main() { dns.Serve(&Driver{}) }
