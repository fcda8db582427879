//go:build tools

// Package kwok only records which command test/cluster/build.sh compiles, so
// that `go mod tidy` keeps its dependencies in go.sum.
package kwok

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
