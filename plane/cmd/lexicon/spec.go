package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// apiDocument is the OpenAPI document, printed as it is in text and JSON alike.
type apiDocument json.RawMessage

func (d apiDocument) Text(w io.Writer)             { _, _ = w.Write(d) }
func (d apiDocument) MarshalJSON() ([]byte, error) { return d, nil }

func apiSpecCmd() *cli.Command {
	var cn conn
	var builtin bool
	return &cli.Command{
		Path: "api spec", Args: "[--builtin]", MaxArgs: 0,
		Summary: "print the OpenAPI 3.1 document of the plane's admin API (no token needed); --builtin: the one this CLI speaks, without asking a plane",
		Setup: func(fs *flag.FlagSet) {
			cn.setup(fs)
			fs.BoolVar(&builtin, "builtin", false, "print the document this CLI was built with instead of asking the plane")
		},
		Run: func(ctx context.Context, _ *cli.Env, _ []string) (any, error) {
			if builtin {
				return apiDocument(api.Spec()), nil
			}
			if cn.plane == "" {
				return nil, errcode.New(errcode.UsageInvalid, "name the plane with --plane URL or LEXICON_PLANE, or print this CLI's own document with --builtin")
			}
			if err := checkPlaneURL(cn.plane); err != nil {
				return nil, err
			}
			hc, _, err := cn.httpClient()
			if err != nil {
				return nil, err
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(cn.plane, "/")+api.SpecPath, nil)
			if err != nil {
				return nil, errcode.Wrap(err, errcode.UsageInvalid, "bad plane URL %s", cn.plane)
			}
			resp, err := hc.Do(req)
			if err != nil {
				return nil, errcode.Wrap(err, errcode.PlaneUnreachable, "cannot reach the plane at %s", cn.plane)
			}
			defer resp.Body.Close()
			data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
			if err != nil {
				return nil, errcode.Wrap(err, errcode.PlaneUnreachable, "reading the plane's answer")
			}
			if resp.StatusCode != http.StatusOK {
				if e := errcode.Parse(data); e != nil {
					return nil, e
				}
				return nil, errcode.New(errcode.PlaneUnexpected, "the plane answered %s (a plane older than its API document?)", resp.Status)
			}
			if !json.Valid(data) {
				return nil, errcode.New(errcode.PlaneUnexpected, "the plane's document is not JSON")
			}
			return apiDocument(data), nil
		},
	}
}
