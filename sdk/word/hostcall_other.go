//go:build !wasip1

package word

// hostCall outside wasip1: a word compiled for the build machine has no host to call. It builds so that
// `go vet ./...` and `go test ./...` cover words; run them through sdk/word/wordtest instead.
func hostCall([]byte) ([]byte, error) { return nil, ErrNoHost }
