// Command probe drives capabilities for the host's tests: it sends each request it is given, as is,
// and returns every answer, result or error.
package main

import (
	"encoding/json"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type params struct {
	Requests []json.RawMessage `json:"requests"`
}

type answer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *errcode.Body   `json:"error,omitempty"`
}

type output struct {
	Answers []answer `json:"answers"`
}

func main() {
	word.Run(func(p params) (output, error) {
		out := output{Answers: []answer{}}
		for _, req := range p.Requests {
			var res json.RawMessage
			err := word.Call(req, &res)
			if err != nil {
				e := errcode.From(err, "probe.failed")
				body := e.Envelope().Error
				out.Answers = append(out.Answers, answer{Error: &body})
				continue
			}
			out.Answers = append(out.Answers, answer{Result: res})
		}
		return out, nil
	})
}
