// Command hello is an example word, written as an outside author would: it imports only the word SDK,
// greets a name, and says which machine answered.
//
// Build it with `make wasm` (or GOOS=wasip1 GOARCH=wasm go build -o hello.wasm .) and test it with
// `go test`, which runs the built module through the real Lexicon host.
package main

import (
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

// Params are what a job gives the word; manifest.json's params schema is the contract.
type Params struct {
	Name  string `json:"name"`
	Shout bool   `json:"shout,omitempty"`
}

// Output is what the word answers; manifest.json's output schema is the contract.
type Output struct {
	Greeting string `json:"greeting"`
	Host     string `json:"host"`
}

func main() {
	word.Run(func(p Params) (Output, error) {
		if strings.TrimSpace(p.Name) == "" {
			return Output{}, word.Fail("hello.no_name", "there is nobody to greet")
		}
		facts, err := word.Sys().Facts() // declared in manifest.json as sys.facts
		if err != nil {
			return Output{}, err
		}
		greeting := "hello, " + p.Name
		if p.Shout {
			greeting = strings.ToUpper(greeting) + "!"
		}
		word.Log("greeted %d characters", len(p.Name))
		return Output{Greeting: greeting, Host: facts.Hostname}, nil
	})
}
