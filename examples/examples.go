// Package examples shows what an outside author writes: a word, a recipe, a driver, and a fleet in a
// box walkthrough, each using only sdk/.
package examples
