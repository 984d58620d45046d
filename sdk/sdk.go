// Package sdk holds what outside authors build on: the word and recipe SDK, the driver contracts with
// their conformance kit, and the error codes every part of Lexicon shares.
package sdk
