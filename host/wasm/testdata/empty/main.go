// Command empty is the least word sdk/word can build: no params, no result. wordbench times its start
// beside the bare command's (testdata/bare), so what the word SDK and its imports initialise at start
// is a figure of its own.
package main

import "github.com/lexicon-fleet/lexicon/sdk/word"

func main() {
	word.Run(func(struct{}) (struct{}, error) { return struct{}{}, nil })
}
