// Command ref is the reference word of the benchmarks: JSON params in, JSON result out, nothing else.
package main

import "github.com/lexicon-fleet/lexicon/sdk/word"

type params struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

type output struct {
	Greeting string `json:"greeting"`
	Count    int    `json:"count"`
}

func main() {
	word.Run(func(p params) (output, error) {
		return output{Greeting: "hello " + p.Name, Count: p.Count + 1}, nil
	})
}
