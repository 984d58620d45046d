//go:build !linux

package platform

import "os"

// MapSealedCode maps nothing here: sealed memfds are Linux's.
func MapSealedCode(*os.File, int64, int) ([]byte, bool) { return nil, false }
