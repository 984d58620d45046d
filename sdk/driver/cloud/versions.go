package cloud

import "github.com/hashicorp/go-plugin"

// APIVersion1 is the first version of the cloud contract on the wire (proto lexicon.driver.cloud.v1).
const APIVersion1 = 1

// APIVersions lists the contract versions this SDK speaks, oldest first. A driver's Info names the ones
// it implements; go-plugin negotiates the newest that host and driver share.
func APIVersions() []int { return []int{APIVersion1} }

// PluginName is the cloud contract's name in go-plugin's plugin sets.
const PluginName = "cloud"

// VersionedPlugins is what the host offers go-plugin (impl nil) to negotiate a version with a cloud
// driver.
func VersionedPlugins(impl Driver) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		APIVersion1: {PluginName: &Plugin{Impl: impl}},
	}
}
