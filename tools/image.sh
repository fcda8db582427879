#!/usr/bin/env bash
# Builds the controller image from the Containerfile with podman:
#   tools/image.sh [TAG]          (make image; TAG defaults to steadfast:VERSION)
# The build stage needs a Debian bookworm base. It uses, in this order:
# $BUILD_IMAGE if set; debian:bookworm if podman already has it or can pull
# it; otherwise one made here from Debian's packages (mmdebstrap, variant
# minbase, cached as ~/.cache/steadfast/debian-bookworm-minbase.tar and
# imported as localhost/steadfast-build-base:bookworm), so the image builds
# where no image registry is reachable. The runtime stage is FROM scratch
# and needs no base at all.
# Builds with chroot isolation and the current open-files limit, which works both
# on a normal host and inside a container that may not raise limits or
# create cgroups. Prints the image's name and size on the last line.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n 's/^#define SF_VERSION "\(.*\)"/\1/p' include/steadfast/client.h)
[ -n "$version" ] || { echo "image: no SF_VERSION in include/steadfast/client.h" >&2; exit 1; }
tag=${1:-steadfast:$version}
case $tag in */*) ;; *) tag=localhost/$tag ;; esac
command -v podman >/dev/null || { echo "image: podman not found (make deps installs it)" >&2; exit 1; }

base=${BUILD_IMAGE:-}
if [ -z "$base" ]; then
	official=docker.io/library/debian:bookworm
	local_base=localhost/steadfast-build-base:bookworm
	if podman image exists "$official"; then
		base=$official
	elif podman image exists "$local_base"; then
		base=$local_base
	elif timeout 60 podman pull -q "$official" >/dev/null 2>&1; then
		base=$official
	else
		echo "image: cannot pull $official; making a Debian bookworm base from Debian's packages" >&2
		command -v mmdebstrap >/dev/null || { echo "image: mmdebstrap not found (make deps installs it)" >&2; exit 1; }
		cache=${XDG_CACHE_HOME:-$HOME/.cache}/steadfast
		tar=$cache/debian-bookworm-minbase.tar
		if [ ! -s "$tar" ]; then
			mkdir -p "$cache"
			# the output format follows the name's extension: keep .tar last
			mmdebstrap --quiet --variant=minbase --mode=root bookworm "$cache/partial-minbase.tar"
			mv "$cache/partial-minbase.tar" "$tar"
		fi
		podman import -q "$tar" "$local_base" >/dev/null
		base=$local_base
	fi
fi
echo "image: building $tag (build stage FROM $base)" >&2
podman build --quiet --pull=never --isolation=chroot \
	--ulimit "nofile=$(ulimit -n):$(ulimit -Hn)" \
	--build-arg BUILD_IMAGE="$base" --build-arg VERSION="$version" \
	-f Containerfile -t "$tag" . >/dev/null
# drop earlier builds of this image that lost their tag to this one (and
# nothing else on the machine)
podman image prune -f --filter label=org.opencontainers.image.title=steadfast >/dev/null 2>&1 || true
size=$(podman image inspect "$tag" --format '{{.Size}}')
echo "image: $tag $((size / 1000000)) MB ($size bytes)"
