// Package driverpb is the generated gRPC code of the base driver contract; regenerate it with make proto.
package driverpb
