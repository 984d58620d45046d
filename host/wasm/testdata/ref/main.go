// Command ref is the reference word of the benchmarks: JSON params in, JSON result out, nothing else.
// With hold_ms it stays in flight that long, so a benchmark can measure words running side by side.
package main

import (
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type params struct {
	Name   string `json:"name"`
	Count  int    `json:"count"`
	HoldMS int    `json:"hold_ms"`
}

type output struct {
	Greeting string `json:"greeting"`
	Count    int    `json:"count"`
}

func main() {
	word.Run(func(p params) (output, error) {
		if p.HoldMS > 0 {
			// The word's run time is what the test sets, not synchronisation: it keeps an instance
			// busy so a test can see concurrent calls and deadlines.
			time.Sleep(time.Duration(p.HoldMS) * time.Millisecond)
		}
		return output{Greeting: "hello " + p.Name, Count: p.Count + 1}, nil
	})
}
