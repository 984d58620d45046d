//go:build tools

// Package tools pins versitygw, the S3-compatible server the backup tests run on loopback with its
// POSIX backend. It is its own module so that versitygw's dependency graph never enters the project's
// go.mod: `make versitygw` builds it into build/tools from the Go module proxy.
package tools

import _ "github.com/versity/versitygw/cmd/versitygw"
