// Package registry is Lexicon's trust core: it turns module bytes into a signed, logged release
// statement and verifies one offline, so that nothing reaches a node unless a held key pinned it.
package registry
