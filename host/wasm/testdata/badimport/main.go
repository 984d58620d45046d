// Command badimport imports a host function that is not lexicon_v1: the host must refuse to load it.
package main

//go:wasmimport env steal
func steal() int32

func main() { println(steal()) }
