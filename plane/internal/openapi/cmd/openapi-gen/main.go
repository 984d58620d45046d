// Command openapi-gen writes the OpenAPI document of the plane's admin API, made from plane/api (see
// plane/internal/openapi). `go generate ./plane/api` runs it in plane/api's folder.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/lexicon-fleet/lexicon/plane/internal/openapi"
)

func main() {
	out := flag.String("o", "openapi.json", "the file to write")
	src := flag.String("api", ".", "plane/api's source folder")
	flag.Parse()
	doc, err := openapi.Generate(*src)
	if err == nil {
		err = os.WriteFile(*out, doc, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapi-gen:", err)
		os.Exit(1)
	}
}
