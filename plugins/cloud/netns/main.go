// Command lexicon-driver-cloud-netns is a local cloud driver: its instances are Linux network
// namespaces on the plane's own machine, each with a veth pair and an address from a private range,
// running the cloud-init user data they are created with. It serves the demo and the tests; it needs
// root and iproute2.
package main

import "github.com/lexicon-fleet/lexicon/sdk/driver/cloud"

func main() {
	runHelper() // the same executable runs inside instances; there it never returns
	cloud.Serve(&Driver{})
}
