// Package host runs pinned modules: words and recipes in wazero (host/wasm), drivers as go-plugin
// subprocesses (host/goplugin), each from bytes whose sha256 a verified statement pins.
package host
