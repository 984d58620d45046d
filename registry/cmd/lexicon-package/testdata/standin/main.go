// Command standin is a stand-in binary for packages of an architecture the test host cannot build the
// real commands for cheaply: packaging looks only at its file, never runs it.
package main

func main() {}
