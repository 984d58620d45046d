// Command bare is the least wasip1 command that does a word's work: it reads stdin and writes stdout,
// with nothing from sdk/word. wordbench times its start as the floor of the Go runtime alone, beside
// the empty word built with sdk/word (testdata/empty).
package main

import "os"

func main() {
	var buf [4096]byte
	n, _ := os.Stdin.Read(buf[:])
	_ = n
	os.Stdout.Write([]byte("{}"))
}
