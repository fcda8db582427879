#!/usr/bin/env bash
# Assembles the runtime root filesystem of the Steadfast image (the
# Containerfile's build stage runs it; the runtime stage is FROM scratch
# and copies the result):
#   - the binary, stripped, at /usr/local/bin/steadfast;
#   - exactly the shared libraries it loads (ldd's closure, with the
#     dynamic loader), at the paths ldd resolved them to, so the loader's
#     default search finds them without an ld.so.cache;
#   - for every Debian package those files come from: its copyright file
#     (/usr/share/doc/PKG/copyright) and its dpkg status stanza in
#     /var/lib/dpkg/status.d/PKG, the layout distroless images use and
#     image scanners read, so a scan sees which versions are inside;
#   - the CA bundle (/etc/ssl/certs/ca-certificates.crt), for an API
#     server whose kubeconfig names no CA of its own;
#   - /etc/passwd and /etc/group with the nonroot user 65532, /tmp (1777).
# No shell, no package manager: nothing in the image runs but the binary.
# Finally the binary is run inside the new root (chroot) to prove the
# closure is complete.
#   tools/image-rootfs.sh BINARY DESTDIR
set -euo pipefail
[ $# = 2 ] || { echo "usage: $0 BINARY DESTDIR" >&2; exit 64; }
bin=$1
dest=$2
[ -x "$bin" ] || { echo "image-rootfs: $bin: not an executable" >&2; exit 1; }
for t in ldd dpkg dpkg-query strip chroot; do
	command -v "$t" >/dev/null || { echo "image-rootfs: $t not found" >&2; exit 1; }
done
ca=/etc/ssl/certs/ca-certificates.crt
[ -f "$ca" ] || { echo "image-rootfs: $ca missing (install ca-certificates)" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$dest"/usr/local/bin "$dest"/etc/ssl/certs "$dest"/var/lib/dpkg/status.d \
	"$dest"/usr/share/doc "$dest"/tmp
chmod 1777 "$dest"/tmp

install -m 0755 "$bin" "$dest"/usr/local/bin/steadfast
strip --strip-unneeded "$dest"/usr/local/bin/steadfast

# "libx.so.1 => /lib/.../libx.so.1 (0x...)" and the loader's own line
# "/lib64/ld-linux-x86-64.so.2 (0x...)".
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)
[ -n "$libs" ] || { echo "image-rootfs: ldd found no libraries for $bin" >&2; exit 1; }
if ldd "$bin" | grep -q 'not found'; then
	echo "image-rootfs: unresolved libraries:" >&2
	ldd "$bin" | grep 'not found' >&2
	exit 1
fi

# The package owning a path; with usrmerge dpkg may know it by either name.
owner() {
	local p
	for p in "$1" "$(readlink -f "$1")" "${1#/usr}" "/usr$1"; do
		dpkg -S "$p" 2>/dev/null | head -1 | cut -d: -f1 && return 0
	done
	return 1
}

pkgs=""
for p in $libs; do
	mkdir -p "$dest$(dirname "$p")"
	cp -L "$p" "$dest$p"
	pkg=$(owner "$p") || { echo "image-rootfs: $p: no Debian package owns it" >&2; exit 1; }
	pkgs="$pkgs $pkg"
done
pkgs=$(printf '%s\n' $pkgs | sort -u)

for pkg in $pkgs; do
	dpkg-query -s "$pkg" >"$dest/var/lib/dpkg/status.d/$pkg"
	# multi-arch packages keep one doc dir without the arch suffix
	doc=/usr/share/doc/${pkg%%:*}
	if [ -f "$doc/copyright" ]; then
		mkdir -p "$dest$doc"
		cp -L "$doc/copyright" "$dest$doc/copyright"
	else
		echo "image-rootfs: $pkg: no $doc/copyright" >&2
		exit 1
	fi
done
cp -L "$ca" "$dest$ca"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' \
	>"$dest"/etc/passwd
printf 'root:x:0:\nnonroot:x:65532:\n' >"$dest"/etc/group

# The proof: the binary starts in the new root with nothing else there.
got=$(chroot "$dest" /usr/local/bin/steadfast --version)
want=$("$bin" --version)
[ "$got" = "$want" ] || {
	echo "image-rootfs: in the new root --version printed '$got', want '$want'" >&2
	exit 1
}
echo "image-rootfs: $(printf '%s\n' $libs | wc -l) files from$(printf ' %s' $pkgs); $(du -sh "$dest" | cut -f1) in all; $got" >&2
