//go:build tools

// Package kueue only records which command test/cluster/build.sh compiles, so
// that `go mod tidy` keeps its dependencies in go.sum.
package kueue

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
