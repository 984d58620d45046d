// Package dnspb is the generated gRPC code of the DNS driver contract; regenerate it with make proto.
package dnspb
