// Command lexicon-driver-dns-rfc2136 is the DNS driver for authoritative servers that take RFC 2136
// dynamic updates signed with TSIG (BIND, Knot, PowerDNS): records are read by zone transfer (AXFR) and
// changed by UPDATE messages, one atomic message per call.
package main

import "github.com/lexicon-fleet/lexicon/sdk/driver/dns"

func main() { dns.Serve(&Driver{}) }
