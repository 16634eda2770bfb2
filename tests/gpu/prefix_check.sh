#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/gpu/run's prefix, checked on a Debian machine without a GPU: in a
# private mount namespace the host's MariaDB, slurmdbd, Slurm and munge
# are bind-mounted away and the libraries Ubuntu 24.04 lacks (libaio.so.1,
# liburing.so.2, libedit.so.2, libncurses.so.6; and libmariadb.so.3,
# Slurm's, munge's, yaml's, json-c's and lua's) leave the loader's cache;
# then tests/gpu/run's own unpack (GPUMEM_GPU_PREFIX_ONLY=1) and
# `cluster start --accounting`: every daemon must run from the prefix, a
# job must reach sacct.  By hand, as root (TAP):
#   tests/gpu/prefix_check.sh [DEBDIR [ACCTDEBDIR]]   (default .debs .debs-acct)
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
debs=$(cd "${1:-$top/.debs}" && pwd) || exit 1
acct=$(cd "${2:-$top/.debs-acct}" && pwd) || exit 1
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root (unshare -m, bind mounts)"; exit 0; }
if [ "${GPUMEM_PREFIX_CHECK_INNER:-}" != 1 ]; then
	T=$(mktemp -d /tmp/gpumem-pfx.XXXXXX); chmod 755 "$T"
	GPUMEM_PREFIX_CHECK_INNER=1 T=$T unshare -m bash "$0" "$debs" "$acct"
	rc=$?
	rm -rf "$T"
	exit $rc
fi
n=0 bad=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; bad=$((bad + 1)); fi; }
trip=x86_64-linux-gnu
mount --make-rprivate /
mkdir -p "$T/empty"
for d in /usr/share/mysql /usr/lib/mysql /etc/mysql /usr/lib/$trip/slurm-wlm /etc/slurm /usr/lib/$trip/libmariadb3; do
	[ -d "$d" ] && mount --bind "$T/empty" "$d"
done
for f in /usr/sbin/mariadbd /usr/bin/mariadb /usr/bin/mysql /usr/bin/mariadb-install-db /usr/bin/my_print_defaults \
	/usr/bin/resolveip /usr/sbin/slurmdbd /usr/sbin/slurmctld /usr/sbin/slurmd /usr/sbin/slurmstepd /usr/sbin/munged \
	/usr/bin/munge /usr/bin/unmunge /usr/bin/srun /usr/bin/sbatch /usr/bin/sacct /usr/bin/sacctmgr /usr/bin/scontrol \
	/usr/bin/squeue /usr/bin/sinfo /usr/bin/salloc /usr/bin/scancel; do
	[ -e "$f" ] && mount --bind /dev/null "$(readlink -f "$f")"
done
for l in libaio.so.1 liburing.so.2 libedit.so.2 libncurses.so.6 libmariadb.so.3 libslurm.so.38 libmunge.so.2 \
	libyaml-0.so.2 libjson-c.so.5 liblua5.1.so.0 liblua5.1-c++.so.0; do
	for f in /usr/lib/$trip/$l* /lib/$trip/$l*; do [ -f "$f" ] && ! [ -L "$f" ] && mount --bind /dev/null "$f"; done
done
ldconfig -C "$T/ld.so.cache" 2>/dev/null && mount --bind "$T/ld.so.cache" /etc/ld.so.cache
ok "$(ldconfig -p | grep -cE 'libaio\.so\.1 |libmariadb\.so\.3 ')" "the host's libaio.so.1 and libmariadb.so.3 are gone from the loader's cache"

env GPUMEM_GPU_PREFIX="$T/prefix" GPUMEM_GPU_PREFIX_ONLY=1 bash "$here/run" /nonexistent "$debs" "$acct" >"$T/env.sh" 2>"$T/unpack.err"
ok $? "tests/gpu/run's unpack (GPUMEM_GPU_PREFIX_ONLY=1)"
sed 's/^/# /' "$T/unpack.err"
for l in libaio.so.1 liburing.so.2 libedit.so.2 libncurses.so.6; do
	grep -q "added $l " "$T/unpack.err"; ok $? "the unpack added $l, which this host now lacks"
done
eval "$(grep '^export ' "$T/env.sh")"
ok "$([ "$GPUMEM_GPU_ACCOUNTING" = 1 ]; echo $?)" "GPUMEM_GPU_ACCOUNTING=1"
export GPUMEM_CLUSTER_DIR=$T/cluster
CL=$top/tests/slurm/cluster
"$CL" start --accounting >"$T/start.log" 2>&1
ok $? "cluster start --accounting from the prefix"
sed 's/^/# /' "$T/start.log"
eval "$("$CL" env)"
for d in mariadbd slurmdbd slurmctld munged; do
	p=$(tr -dc 0-9 <"$GPUMEM_CLUSTER_DIR/run/$d.pid" 2>/dev/null)
	case $(readlink "/proc/$p/exe" 2>/dev/null) in "$T/prefix/"*) r=0 ;; *) r=1 ;; esac
	ok $r "$d runs $(readlink "/proc/$p/exe" 2>/dev/null)"
done
p=$(tr -dc 0-9 <"$GPUMEM_CLUSTER_DIR/run/mariadbd.pid" 2>/dev/null)
grep -q "$T/prefix/.*libaio.so.1" "/proc/$p/maps"; ok $? "mariadbd maps the prefix's libaio.so.1"
p=$(tr -dc 0-9 <"$GPUMEM_CLUSTER_DIR/run/slurmdbd.pid" 2>/dev/null)
grep -q "$T/prefix/.*accounting_storage_mysql.so" "/proc/$p/maps" && grep -q "$T/prefix/.*libmariadb.so.3" "/proc/$p/maps"
ok $? "slurmdbd maps the prefix's accounting_storage_mysql.so and libmariadb.so.3"
jid=$(sbatch --parsable -N1 -J prefixcheck -o /dev/null --wrap 'sleep 1')
for _ in $(seq 1 100); do
	[ "$(sacct -X -n -P -j "$jid" -o State 2>/dev/null)" = COMPLETED ] && break
	sleep 0.3
done
st=$(sacct -X -n -P -j "$jid" -o JobName,State 2>/dev/null)
ok "$([ "$st" = "prefixcheck|COMPLETED" ]; echo $?)" "a batch job reaches sacct: $st"
"$CL" stop
echo "1..$n"
[ "$bad" = 0 ]
