// Package plugins holds the built-in drivers, plugins/cloud/<provider> and plugins/dns/<provider>, each a
// go-plugin executable built only on sdk/driver and its provider's SDK.
package plugins
