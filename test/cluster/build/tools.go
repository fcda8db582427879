//go:build tools

// Package build only records which commands test/cluster/build.sh compiles, so
// that `go mod tidy` keeps their dependencies in go.sum.
package build

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kubelet/app"
)
