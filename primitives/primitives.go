// Package primitives is the built-in vocabulary: one folder per word, recipes under recipes/, each a
// wasip1 module built only on sdk/word, exactly as an outside author would write it.
package primitives
