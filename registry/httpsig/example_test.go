package httpsig_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// The agent signs a claim; the plane verifies it, learns which node sent it, and refuses it the
// second time.
func Example() {
	node := keys.NewNode()
	now := time.Now()

	body := []byte(`{"idle":true}`)
	req, _ := http.NewRequest("POST", "https://plane.example.com/api/v1/agent/claim", bytes.NewReader(body))
	if err := httpsig.Sign(req, body, node, now); err != nil {
		panic(err)
	}

	// The plane knows the node's key from its approved join, by keyid.
	v := &httpsig.Verifier{
		Keys: func(_ context.Context, keyID string) (keys.NodePublic, bool, error) {
			return node.Public(), keyID == httpsig.KeyID(node.Public()), nil
		},
		Nonces: httpsig.NewMemoryNonces(0, nil),
	}
	// As the plane receives it: origin-form request line, TLS connection.
	in := httptest.NewRequest("POST", "https://plane.example.com/api/v1/agent/claim", bytes.NewReader(body))
	in.Header = req.Header.Clone()

	proof, err := v.Verify(in, body, now)
	fmt.Println(err == nil && proof.Key.Equal(node.Public()))
	_, err = v.Verify(in, body, now)
	fmt.Println(errcode.Code(err))
	// Output:
	// true
	// channel.replayed
}
