package word_test

import (
	"encoding/json"
	"fmt"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

// A word fails with a reason of its own, named <word>.<reason>; the job's result carries the code and
// the message, and the word's caller branches on the code.
func ExampleFail() {
	err := word.Fail("hello.no_name", "there is nobody to greet")
	fmt.Println(word.Code(err))
	fmt.Println(err)
	// Output:
	// hello.no_name
	// hello.no_name: there is nobody to greet
}

// A recipe's check answers a verdict. A failing one carries the params of the recipe's repair word;
// the agent checks them against that word's params schema before anything runs.
func ExampleFailing() {
	type repair struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	v := word.Failing("%s lacks the line", "/etc/motd.d/lexicon").
		WithRepair(repair{Path: "/etc/motd.d/lexicon", Content: "managed\n"})
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
	// Output:
	// {"verdict":"fail","detail":"/etc/motd.d/lexicon lacks the line","repair":{"path":"/etc/motd.d/lexicon","content":"managed\n"}}
}

// Where the machine cannot answer, a check says unknown: an unknown verdict never repairs and never
// counts towards one.
func ExampleUnknown() {
	v := word.Unknown("no systemd on this machine")
	fmt.Println(v.Verdict, v.Detail, v.Repair == nil)
	// Output: unknown no systemd on this machine true
}
