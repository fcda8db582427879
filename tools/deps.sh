#!/usr/bin/env bash
# Installs what building and testing Steadfast needs, only when missing:
# the Debian packages (libcurl GnuTLS flavour, yajl, libyaml, GnuTLS, libuv,
# criterion, pkg-config, clang and its libFuzzer runtime, openssl, python3,
# podman, runc and mmdebstrap for the image and its tests, python3-yaml and
# util-linux's unshare for the KUEUE=true test control plane; containerd,
# the CNI plugins, socat, iproute2, iptables and the static busybox for the
# real node of KUBELET=true test/cluster/up.sh),
# and a Go toolchain new enough for the pinned Kubernetes release.
set -euo pipefail

need_go="1.26"
pkgs=(
	build-essential pkg-config libcurl4-gnutls-dev libyajl-dev libyaml-dev
	libgnutls28-dev libuv1-dev libcriterion-dev clang libclang-rt-14-dev
	clang-format cppcheck openssl python3 curl ca-certificates git
	podman runc mmdebstrap python3-yaml util-linux
	containerd containernetworking-plugins socat iproute2 iptables busybox-static
)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing Debian packages: ${missing[*]} (run make deps as root)" >&2
		exit 1
	fi
	echo "deps: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

go_ok() {
	command -v go >/dev/null 2>&1 || return 1
	local v
	v=$(go env GOVERSION 2>/dev/null | sed 's/^go//') || return 1
	[ "$(printf '%s\n%s\n' "$need_go" "$v" | sort -V | head -1)" = "$need_go" ]
}
if ! go_ok; then
	# Debian's golang is older than Kubernetes needs; it can still fetch the
	# official toolchain as a Go module, which is then put first on PATH.
	if ! command -v go >/dev/null 2>&1; then
		echo "deps: installing golang-go to bootstrap a newer toolchain" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >&2
	fi
	tc="golang.org/toolchain@v0.0.1-go1.26.8.linux-amd64"
	echo "deps: fetching Go toolchain module $tc" >&2
	(cd /tmp && GOFLAGS=-mod=mod go mod download "$tc")
	# Module files are read-only and not executable: install a copy.
	dest=/usr/local/lib/steadfast-go1.26.8
	rm -rf "$dest"
	cp -r "$(go env GOMODCACHE)/$tc" "$dest"
	chmod -R u+w "$dest"
	chmod +x "$dest"/bin/* "$dest"/pkg/tool/*/*
	ln -sf "$dest/bin/go" /usr/local/bin/go
	ln -sf "$dest/bin/gofmt" /usr/local/bin/gofmt
	hash -r
	go_ok || { echo "deps: could not provide Go >= $need_go" >&2; exit 1; }
fi
