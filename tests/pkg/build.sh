#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The packages, built the way a site builds them: from the `make dist`
# tarball, a .deb with dpkg-buildpackage (debian/) and an .rpm with
# rpmbuild -ta (contrib/gpumem.spec), each in a temporary directory.  Checks
# that each holds the plugin in the directory its Slurm loads plugins from,
# the CLI and helpers, the man pages, the site file and plugstack snippet as
# configuration files the package manager will not overwrite, no libtool
# archives, and a dependency on the Slurm release series the plugin was
# built against (Slurm refuses a SPANK plugin of another series), and the
# accounts the install makes (gpumem-check, gpumem-sample: the packaged
# postinst, and the .rpm's systemd-sysusers, each in a root of its own).
#
#   GPUMEM_DIST_TARBALL=PATH  use this tarball instead of running `make dist`
#   GPUMEM_PKG_CUDA=no        build without CUDA even where nvcc exists
#   GPUMEM_PKG_KEEP=1         keep the temporary directory (its path is printed)
#
# With nvcc (CUDA_HOME, default /usr/local/cuda) the GPU programs are built
# and checked too (gpumem-cuda); without it both builds run without CUDA and
# those checks are skipped.  The package builds skip their own tests
# (DEB_BUILD_OPTIONS=nocheck, rpmbuild --without check): `make check` runs them.
# shellcheck disable=SC2154 # top_srcdir, out and rc come from lib.sh
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"

# The package builds run make themselves: nothing of the make running this
# test (jobserver, TESTS=...) or of its test environment may leak into them.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES GPUMEM
BUILD_ENV="env -u top_srcdir -u top_builddir"

missing=""
for t in make tar nm readelf dpkg-buildpackage dpkg-checkbuilddeps dpkg-deb dh rpmbuild rpm; do
	command -v "$t" >/dev/null 2>&1 || missing="$missing $t"
done
[ -z "$missing" ] ||
	skip_all "missing:$missing (apt-get install rpm debhelper dpkg-dev)"

jobs=$(nproc 2>/dev/null || echo 2)
arch=$(dpkg --print-architecture)
rpm_isa=$(rpm --eval '%{?_isa}')
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-pkg.XXXXXX") || { echo "Bail out! mktemp"; exit 1; }
if [ "${GPUMEM_PKG_KEEP:-0}" = 1 ]; then
	diag "kept: $tmp"
else
	trap 'rm -rf "$tmp"' EXIT
fi
t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0)) s"; }
# show_log FILE: the end of a build log, as diagnostics
show_log() { tail -n 40 "$1" | sed 's/^/#   /'; }

# ------------------------------------------------------------ the tarball
if [ -n "${GPUMEM_DIST_TARBALL:-}" ]; then
	tarball=$GPUMEM_DIST_TARBALL
else
	version=$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")
	if $BUILD_ENV make -C "$top_builddir" dist >"$tmp/dist.log" 2>&1 &&
	   [ -f "$top_builddir/gpumem-$version.tar.gz" ]; then
		mv "$top_builddir/gpumem-$version.tar.gz" "$tmp/"
		tarball=$tmp/gpumem-$version.tar.gz
		pass "make dist ($(elapsed))"
	else
		fail "make dist"
		show_log "$tmp/dist.log"
		done_testing
	fi
fi
case $tarball in
*/gpumem-*.tar.gz|gpumem-*.tar.gz) ;;
*)	fail "tarball name gpumem-VERSION.tar.gz: $tarball"; done_testing ;;
esac
ver=$(basename "$tarball" .tar.gz)
ver=${ver#gpumem-}
listing=$(tar -tzf "$tarball")
for f in debian/control debian/rules debian/changelog debian/source/format contrib/gpumem.spec \
	 doc/ADMIN.md doc/admin/troubleshooting.md contrib/nhc/gpumem.nhc; do
	like "$listing" "^gpumem-$ver/$f\$" "the dist tarball has $f" ||
		diag "add it to EXTRA_DIST (Makefile.am)"
done
# The packaging states the version itself: it must be the tarball's.
tar -xzf "$tarball" -C "$tmp" "gpumem-$ver/debian/changelog" "gpumem-$ver/contrib/gpumem.spec" 2>/dev/null
is "$(sed -n '1s/^gpumem (\([^)]*\)).*/\1/p' "$tmp/gpumem-$ver/debian/changelog" 2>/dev/null)" "$ver" \
	"debian/changelog is at the tarball's version"
is "$(sed -n 's/^Version:[[:space:]]*//p' "$tmp/gpumem-$ver/contrib/gpumem.spec" 2>/dev/null)" "$ver" \
	"gpumem.spec is at the tarball's version"
rm -rf "${tmp:?}/gpumem-$ver"

# ------------------------------------------------------------ expectations
# The Slurm the packages are built against: Debian's libslurm-dev, whose
# headers both builds read.  The dependency must name its series.
slurm_deb=$(dpkg-query -W -f='${Version}' libslurm-dev 2>/dev/null)
slurm=${slurm_deb#*:}
slurm=${slurm%%-*}
major=${slurm%%.*}
minor=$(echo "$slurm" | cut -d. -f2)
next=$(printf '%d.%02d' "$major" $((${minor#0} + 1)))
diag "Slurm $slurm (libslurm-dev $slurm_deb): the packages must accept $slurm up to $next"

cuda=no
if [ "${GPUMEM_PKG_CUDA:-yes}" != no ]; then
	cuda_home=${CUDA_HOME:-/usr/local/cuda}
	[ -x "$cuda_home/bin/nvcc" ] && [ -f "$cuda_home/include/cuda.h" ] && cuda=yes
fi
diag "CUDA: $cuda"

# accounts ROOT WHAT: the accounts the install made in ROOT/etc (it held only
# root and nobody): gpumem-check and gpumem-sample, system users (uid below
# 1000) with groups of their own, two uids, neither nobody's 65534.
accounts() {
	c=$(awk -F: '$1 == "gpumem-check" { print $3 ":" $4 ":" $7 }' "$1/etc/passwd")
	s=$(awk -F: '$1 == "gpumem-sample" { print $3 ":" $4 ":" $7 }' "$1/etc/passwd")
	diag "$2: gpumem-check $c, gpumem-sample $s"
	like "$c" '^[1-9][0-9]{0,2}:[0-9]+:.*nologin$' "$2: the install makes the system account gpumem-check (no shell)"
	like "$s" '^[1-9][0-9]{0,2}:[0-9]+:.*nologin$' "$2: ... and gpumem-sample"
	is "$(grep -c -e '^gpumem-check:x:'"${c%%:*}"':$' -e '^gpumem-sample:x:'"${s%%:*}"':$' "$1/etc/group")" 2 \
		"$2: ... each with a group of its own"
	if [ -n "$c" ] && [ "${c%%:*}" != "${s%%:*}" ] && [ "${c%%:*}" != 65534 ] && [ "${s%%:*}" != 65534 ]; then
		pass "$2: two uids, neither nobody's 65534"
	else
		fail "$2: two uids, neither nobody's 65534 ($c, $s)"
	fi
}
# minimal_etc ROOT: an /etc with root and nobody only, for an install to add to.
minimal_etc() {
	mkdir -p "$1/etc"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$1/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$1/etc/group"
	printf 'root:*::0:99999:7:::\nnobody:*::0:99999:7:::\n' >"$1/etc/shadow"
	printf 'root:*::\nnogroup:*::\n' >"$1/etc/gshadow"
}

# has LIST REGEX WHAT: one line of LIST matches ^REGEX$
has() {
	if printf '%s\n' "$1" | grep -Eq -- "^$2\$"; then pass "$3"
	else fail "$3"; diag "no line matching ^$2\$ in:"; printf '%s\n' "$1" | sed 's/^/#   /' | head -60; fi
}

# ------------------------------------------------------------ .deb
mkdir -p "$tmp/deb"
tar -xzf "$tarball" -C "$tmp/deb"
src=$tmp/deb/gpumem-$ver
if [ $cuda = yes ]; then profile=""; else profile="-Ppkg.gpumem.nocuda"; fi
if ! unmet=$(cd "$src" && dpkg-checkbuilddeps $profile 2>&1); then
	skip "the .deb: build dependencies missing here: $unmet"
	deb_built=no
else
	# shellcheck disable=SC2086 # $profile is one word or none
	(cd "$src" && $BUILD_ENV DEB_BUILD_OPTIONS="nocheck parallel=$jobs" \
		CUDA_HOME="${cuda_home:-/usr/local/cuda}" \
		dpkg-buildpackage -us -uc -b $profile) >"$tmp/deb.log" 2>&1
	is "$?" 0 "dpkg-buildpackage -b ${profile:-(with CUDA)} ($(elapsed))" || show_log "$tmp/deb.log"
	deb_built=yes
fi
deb=$tmp/deb/gpumem_${ver}_$arch.deb
debcuda=$tmp/deb/gpumem-cuda_${ver}_$arch.deb
if [ $deb_built = yes ] && [ -f "$deb" ]; then
	pass "gpumem_${ver}_$arch.deb"
	files=$(dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./|/|; s|/$||')
	multi=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
	has "$files" "/usr/lib/$multi/slurm-wlm/gpumem\.so" ".deb: gpumem.so in Debian's Slurm plugin directory"
	has "$files" "/usr/bin/gpumem" ".deb: the gpumem CLI"
	has "$files" "/usr/libexec/gpumem/gpumem-probe" ".deb: gpumem-probe"
	has "$files" "/usr/libexec/gpumem/gpumem-health" ".deb: gpumem-health"
	has "$files" "/usr/share/man/man1/gpumem\.1\.gz" ".deb: gpumem(1)"
	has "$files" "/usr/share/man/man5/gpumem-policy\.5\.gz" ".deb: gpumem-policy(5)"
	has "$files" "/usr/share/man/man8/gpumem_spank\.8\.gz" ".deb: gpumem_spank(8)"
	has "$files" "/etc/slurm/plugstack\.conf\.d/gpumem\.conf" ".deb: the plugstack snippet"
	has "$files" "/etc/slurm/gpumem\.yaml" ".deb: the site file"
	has "$files" "/usr/share/gpumem/policies/stream\.yaml" ".deb: the example policies"
	has "$files" "/var/lib/gpumem/reports" ".deb: the report directory"
	has "$files" "/usr/share/doc/gpumem/ADMIN\.md(\.gz)?" ".deb: the admin guide"
	has "$files" "/usr/share/doc/gpumem/admin/troubleshooting\.md(\.gz)?" ".deb: the admin guide's pages"
	has "$files" "/usr/share/doc/gpumem/examples/nhc/gpumem\.nhc" ".deb: the NHC check, uncompressed"
	has "$files" "/usr/share/doc/gpumem/examples/slurm/epilog\.d/gpumem-check" ".deb: the example Epilog"
	unlike "$files" '\.la$' ".deb: no libtool archives"
	conffiles=$(dpkg-deb -I "$deb" conffiles 2>/dev/null)
	has "$conffiles" "/etc/slurm/gpumem\.yaml" ".deb: the site file is a conffile"
	has "$conffiles" "/etc/slurm/plugstack\.conf\.d/gpumem\.conf" ".deb: the plugstack snippet is a conffile"
	depends=$(dpkg-deb -f "$deb" Depends)
	diag "Depends: $depends"
	like "$depends" "slurm-wlm-basic-plugins \(>= $slurm\)" ".deb: needs Slurm >= $slurm"
	like "$depends" "slurm-wlm-basic-plugins \(<< $next~\)" ".deb: and Slurm before $next"
	like "$depends" "libyaml-0-2" ".deb: shlibs found libyaml"

	# Unpacked (no installation): the programs run and the files agree.
	root=$tmp/deb/root
	dpkg -x "$deb" "$root"
	so=$root/usr/lib/$multi/slurm-wlm/gpumem.so
	run nm -D --defined-only "$so"
	like "$out" " slurm_spank_init$" ".deb: gpumem.so is a SPANK plugin (slurm_spank_init)"
	like "$out" " plugin_version$" ".deb: gpumem.so records the Slurm version (plugin_version)"
	unlike "$(readelf -d "$so" "$root/usr/bin/gpumem" 2>&1)" "RPATH|RUNPATH" ".deb: no RPATH"
	run "$root/usr/bin/gpumem" --version
	like "$out" "^gpumem $ver" ".deb: gpumem --version says $ver"
	run "$root/usr/bin/gpumem" validate --site "$root/etc/slurm/gpumem.yaml" \
		"$root"/usr/share/gpumem/policies/*.yaml
	is "$rc" 0 ".deb: the packaged site file and policies validate" || diag "$out"
	like "$(cat "$root/etc/slurm/plugstack.conf.d/gpumem.conf")" \
		"^(required|optional) +([^ ]*/)?gpumem\.so .*site=/etc/slurm/gpumem\.yaml" \
		".deb: the snippet loads gpumem.so with the packaged site file"
	# The plugin's own accounts: the packaged postinst, run as dpkg runs it
	# for an install into DPKG_ROOT (the root holding only root and nobody).
	has "$files" "/usr/lib/sysusers\.d/gpumem\.conf" ".deb: the accounts' sysusers.d file"
	postinst=$(dpkg-deb -I "$deb" postinst 2>/dev/null)
	like "$postinst" "systemd-sysusers .*gpumem\.conf" ".deb: its postinst makes the accounts"
	like "$(dpkg-deb -f "$deb" Depends)" "systemd-sysusers|systemd" ".deb: and depends on systemd-sysusers"
	if command -v systemd-sysusers >/dev/null 2>&1; then
		minimal_etc "$root"
		printf '%s\n' "$postinst" >"$tmp/postinst"
		run env DPKG_ROOT="$root" sh "$tmp/postinst" configure
		is "$rc" 0 ".deb: the postinst runs (configure, DPKG_ROOT)" || diag "$out"
		accounts "$root" ".deb"
	else
		skip ".deb: the accounts: no systemd-sysusers here to run the postinst"
	fi
	if [ $cuda = yes ]; then
		if [ -f "$debcuda" ]; then
			pass "gpumem-cuda_${ver}_$arch.deb"
			files=$(dpkg-deb --fsys-tarfile "$debcuda" | tar -t | sed 's|^\./|/|; s|/$||')
			has "$files" "/usr/bin/gpumem-check" ".deb cuda: gpumem-check"
			has "$files" "/usr/libexec/gpumem/gpumem-l2reset" ".deb cuda: gpumem-l2reset"
			has "$files" "/usr/lib/$multi/gpumem/libgpumem-um\.so" ".deb cuda: libgpumem-um.so"
			has "$files" "/usr/share/man/man8/gpumem-check\.8\.gz" ".deb cuda: gpumem-check(8)"
			unlike "$files" '\.la$' ".deb cuda: no libtool archives"
			like "$(dpkg-deb -f "$debcuda" Depends)" "gpumem \(= $ver\)" \
				".deb cuda: needs gpumem of the same version"
			unlike "$(dpkg-deb -f "$debcuda" Depends)" "cuda|nvidia" \
				".deb cuda: no CUDA package needed on the nodes"
		else
			fail "gpumem-cuda_${ver}_$arch.deb"
		fi
	else
		skip ".deb cuda: no nvcc here (built with -Ppkg.gpumem.nocuda)"
	fi
elif [ $deb_built = yes ]; then
	fail "gpumem_${ver}_$arch.deb"
	find "$tmp/deb" -maxdepth 1 -name '*.deb' | sed 's/^/#   /'
fi

# ------------------------------------------------------------ .rpm
# Debian's rpmdb knows none of the BuildRequires: --nodeps.
if [ $cuda = yes ]; then rpmcuda="--define=cuda_home ${cuda_home}"; else rpmcuda="--without=cuda"; fi
$BUILD_ENV rpmbuild -ta --nodeps --without=check "$rpmcuda" --define="_topdir $tmp/rpm" \
	--define="_smp_mflags -j$jobs" "$tarball" >"$tmp/rpm.log" 2>&1
is "$?" 0 "rpmbuild -ta ($(elapsed))" || show_log "$tmp/rpm.log"
rpmf="" rpmcudaf=""
for f in "$tmp"/rpm/RPMS/*/gpumem-"$ver"-*.rpm; do [ -f "$f" ] && rpmf=$f; done
for f in "$tmp"/rpm/RPMS/*/gpumem-cuda-"$ver"-*.rpm; do [ -f "$f" ] && rpmcudaf=$f; done
if [ -n "$rpmf" ]; then
	pass "$(basename "$rpmf")"
	libdir=$(rpm --eval '%{_libdir}')
	files=$(rpm -qlp "$rpmf" 2>/dev/null)
	has "$files" "$libdir/slurm/gpumem\.so" ".rpm: gpumem.so in %{_libdir}/slurm"
	has "$files" "/usr/bin/gpumem" ".rpm: the gpumem CLI"
	has "$files" "/usr/libexec/gpumem/gpumem-probe" ".rpm: gpumem-probe"
	has "$files" "/usr/libexec/gpumem/gpumem-health" ".rpm: gpumem-health"
	has "$files" "/usr/share/man/man1/gpumem\.1(\.gz)?" ".rpm: gpumem(1)"
	has "$files" "/usr/share/man/man5/gpumem-policy\.5(\.gz)?" ".rpm: gpumem-policy(5)"
	has "$files" "/usr/share/man/man8/gpumem_spank\.8(\.gz)?" ".rpm: gpumem_spank(8)"
	has "$files" "/etc/slurm/plugstack\.conf\.d/gpumem\.conf" ".rpm: the plugstack snippet"
	has "$files" "/usr/share/gpumem/policies/stream\.yaml" ".rpm: the example policies"
	has "$files" "/var/lib/gpumem/reports" ".rpm: the report directory"
	has "$files" "/usr/share/doc/gpumem(-$ver)?/ADMIN\.md" ".rpm: the admin guide"
	has "$files" "/usr/share/doc/gpumem(-$ver)?/admin/troubleshooting\.md" ".rpm: the admin guide's pages"
	has "$files" "/usr/share/doc/gpumem(-$ver)?/examples/nhc/gpumem\.nhc" ".rpm: the NHC check"
	unlike "$files" '\.la$' ".rpm: no libtool archives"
	flags=$(rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpmf" 2>/dev/null)
	has "$flags" "cn /etc/slurm/gpumem\.yaml" ".rpm: the site file is %config(noreplace)"
	has "$flags" "cn /etc/slurm/plugstack\.conf\.d/gpumem\.conf" \
		".rpm: the plugstack snippet is %config(noreplace)"
	requires=$(rpm -qp --requires "$rpmf" 2>/dev/null)
	diag "Requires (slurm):" "$(printf '%s\n' "$requires" | grep slurm)"
	has "$requires" "slurm$(echo "$rpm_isa" | sed 's/[()]/\\&/g') >= $slurm" ".rpm: needs Slurm >= $slurm"
	has "$requires" "slurm$(echo "$rpm_isa" | sed 's/[()]/\\&/g') < $next" ".rpm: and Slurm before $next"
	unlike "$(rpm -qp --provides "$rpmf" 2>/dev/null)" "gpumem\.so" \
		".rpm: the plugin is not offered as a library to link against"
	has "$files" "/usr/lib/sysusers\.d/gpumem\.conf" ".rpm: the accounts' sysusers.d file"
	like "$(rpm -qp --scripts "$rpmf" 2>/dev/null)" "postinstall scriptlet.*
systemd-sysusers /usr/lib/sysusers\.d/gpumem\.conf" ".rpm: its %post makes the accounts"
	# Unpacked by rpm2archive (rpm's own, a tar; Debian's rpm has no cpio).
	if command -v systemd-sysusers >/dev/null 2>&1 && command -v rpm2archive >/dev/null 2>&1; then
		rroot=$tmp/rpm/root
		mkdir -p "$rroot" && rpm2archive -n - <"$rpmf" | tar -xf - -C "$rroot"
		minimal_etc "$rroot"
		run systemd-sysusers --root="$rroot" gpumem.conf
		is "$rc" 0 ".rpm: its %post's systemd-sysusers, in a root of its own" || diag "$out"
		accounts "$rroot" ".rpm"
	else
		skip ".rpm: the accounts: no systemd-sysusers or rpm2archive here"
	fi
	if [ $cuda = yes ]; then
		if [ -n "$rpmcudaf" ]; then
			pass "$(basename "$rpmcudaf")"
			files=$(rpm -qlp "$rpmcudaf" 2>/dev/null)
			has "$files" "/usr/bin/gpumem-check" ".rpm cuda: gpumem-check"
			has "$files" "/usr/libexec/gpumem/gpumem-l2reset" ".rpm cuda: gpumem-l2reset"
			has "$files" "$libdir/gpumem/libgpumem-um\.so" ".rpm cuda: libgpumem-um.so"
			has "$files" "/usr/share/man/man8/gpumem-check\.8(\.gz)?" ".rpm cuda: gpumem-check(8)"
			unlike "$files" '\.la$' ".rpm cuda: no libtool archives"
		else
			fail "gpumem-cuda-$ver rpm"
		fi
	else
		skip ".rpm cuda: no nvcc here (built --without cuda)"
	fi
else
	fail "gpumem-$ver rpm"
	find "$tmp/rpm" -name '*.rpm' | sed 's/^/#   /'
fi
diag "package test: $(elapsed)"
done_testing
