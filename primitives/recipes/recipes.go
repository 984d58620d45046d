// Package recipes holds the built-in recipes: one folder each, a wasip1 check built on sdk/word alone,
// and the manifest that declares what it checks, how often, where it applies and how it repairs.
package recipes
