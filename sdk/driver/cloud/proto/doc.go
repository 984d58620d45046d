// Package cloudpb is the generated gRPC code of the cloud driver contract; regenerate it with make proto.
package cloudpb
