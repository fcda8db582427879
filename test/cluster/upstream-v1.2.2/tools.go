//go:build tools

// Package upstream only records which command test/cluster/build.sh compiles,
// so that `go mod tidy` keeps its dependencies in go.sum.
package upstream

import (
	_ "github.com/project-codeflare/appwrapper/cmd"
)
