// Package sdk holds what outside authors build on: the word and recipe SDK, the driver contracts with
// their conformance kit, the error codes every part of Lexicon shares, and the test kit (sdk/testkit)
// its tests and authors' tests share.
//
// It imports nothing of Lexicon outside sdk, so that every other part may import it. The one exception
// is the pair of test kits that run a built word or recipe on the real host, sdk/word/wordtest and
// sdk/word/recipetest: they import host and registry, never agent or plane, and never build for wasip1
// (RATIONALE.md, "What sdk may import").
package sdk
