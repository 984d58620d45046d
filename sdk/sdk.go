// Package sdk holds what outside authors build on: the word and recipe SDK, the driver contracts with
// their conformance kit, the error codes every part of Lexicon shares, and the test kit (sdk/testkit)
// its tests and authors' tests share.
package sdk
