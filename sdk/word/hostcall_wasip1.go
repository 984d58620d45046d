//go:build wasip1

package word

import (
	"runtime"
	"unsafe"

	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

//go:wasmimport lexicon_v1 call
func lexiconCall(reqPtr, reqLen, respPtr, respCap uint32) uint32

//go:wasmimport lexicon_v1 take
func lexiconTake(respPtr, respCap uint32) uint32

// firstBuffer is the response buffer every call starts with; a larger answer is fetched with take.
const firstBuffer = 16 << 10

func ptr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

func hostCall(req []byte) ([]byte, error) {
	if len(req) > capv1.MaxRequest {
		return nil, errRequestTooLarge(len(req))
	}
	buf := make([]byte, firstBuffer)
	n := lexiconCall(ptr(req), uint32(len(req)), ptr(buf), uint32(len(buf)))
	runtime.KeepAlive(req)
	if n <= uint32(len(buf)) {
		return buf[:n], nil
	}
	big := make([]byte, n)
	m := lexiconTake(ptr(big), n)
	runtime.KeepAlive(big)
	return big[:min(m, n)], nil
}
