// Package plane is the management plane: it enrols nodes, routes jobs by the vocabulary each node
// reports, runs drivers, and turns what nodes say into incidents, without ever holding a shell.
package plane
