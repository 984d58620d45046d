// Package authors proves the author's path from outside the repository: its tests make a fresh module
// that requires Lexicon, as an author's would, and write, test, sign and run a word, a recipe and a
// driver with only the public packages and the released binaries.
package authors
