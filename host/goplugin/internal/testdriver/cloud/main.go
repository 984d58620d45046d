// Command cloud is a cloud driver for host/goplugin's tests: the SDK's in-memory mock.
package main

import "github.com/lexicon-fleet/lexicon/sdk/driver/cloud"

func main() { cloud.Serve(&cloud.Mock{SwapRequiresStopped: true}) }
