#!/usr/bin/env bash
# Build and install OpenPBS from a source checkout.
#
#   scripts/openpbs/build.sh SRC PREFIX
#
# SRC    an OpenPBS git checkout or unpacked release (https://github.com/openpbs/openpbs,
#        e.g. tag v23.06.06); it is configured out of tree in SRC/_gleaner_build.
# PREFIX where to install (e.g. /opt/pbs); scripts/openpbs/cluster.sh takes it as PBS_EXEC.
#
# Installs Debian's build dependencies with apt-get when one is missing (needs root),
# then autogen (if needed), configure, make, make install. Idempotent: a rerun with
# the same SRC revision and PREFIX rebuilds nothing (make is incremental) and skips
# the install when PREFIX/.gleaner-build records the same revision.
#
# Environment: JOBS (make -j, default 2), NICE (prefix for make, default "nice"),
# PYTHON_PREFIX (the Python the daemons embed, default /usr: Debian's python3),
# SKIP_DEPS=1 (do not touch apt), FORCE=1 (reinstall even if up to date).
set -euo pipefail

die() { echo "build.sh: $*" >&2; exit 1; }
say() { echo "build.sh: $*"; }

[ $# -eq 2 ] || die "usage: $0 SRC PREFIX"
SRC=$1 PREFIX=$2
JOBS=${JOBS:-2}
NICE=${NICE:-nice}

[ -d "$SRC" ] || die "SRC '$SRC' is not a directory"
SRC=$(cd "$SRC" && pwd)
if [ ! -f "$SRC/configure.ac" ] || ! grep -qi '^AC_INIT(\[openpbs\]' "$SRC/configure.ac" \
   || [ ! -f "$SRC/src/server/pbsd_main.c" ]; then
  die "SRC '$SRC' is not an OpenPBS source checkout (no configure.ac with AC_INIT([OpenPBS] ... and src/server/pbsd_main.c); get one with: git clone https://github.com/openpbs/openpbs && git -C openpbs checkout v23.06.06"
fi
case $PREFIX in /*) ;; *) die "PREFIX must be an absolute path, got '$PREFIX'";; esac

# AC_INIT([OpenPBS],\n  [23.06.06], ...: the version is the first [..] after the name.
version=$(sed -n '/^AC_INIT(/,/)/p' "$SRC/configure.ac" | tr -d '\n' | sed -n 's/^AC_INIT(\[[^]]*\],[[:space:]]*\[\([^]]*\)\].*/\1/p')
rev=$(git -C "$SRC" describe --tags --always --dirty 2>/dev/null || echo "$version")
say "OpenPBS $version ($rev) from $SRC -> $PREFIX"

# --- Debian build (and run-time) dependencies, from OpenPBS's INSTALL for Debian -----------
DEPS=(gcc g++ make libtool autoconf automake pkg-config libhwloc-dev libx11-dev libxt-dev
      libedit-dev libical-dev libncurses-dev perl postgresql-server-dev-all postgresql-contrib
      postgresql python3-dev tcl-dev tk-dev swig libexpat1-dev libssl-dev libxext-dev
      libxft-dev zlib1g-dev libcjson-dev expat libedit2 python3 tcl tk)
if [ "${SKIP_DEPS:-0}" != 1 ]; then
  command -v dpkg-query >/dev/null || die "not a Debian system (no dpkg-query); install the dependencies from SRC/INSTALL yourself and rerun with SKIP_DEPS=1"
  missing=()
  for p in "${DEPS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "missing Debian packages (${missing[*]}); run as root or install them and rerun with SKIP_DEPS=1"
    say "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    say "Debian build dependencies present"
  fi
fi

stamp="$PREFIX/.gleaner-build"
if [ "${FORCE:-0}" != 1 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$rev $SRC" ] \
   && [ -x "$PREFIX/sbin/pbs_server.bin" ]; then
  say "already installed: $PREFIX has $rev (FORCE=1 to rebuild)"
  exit 0
fi

# --- configure, out of tree --------------------------------------------------------------------
B="$SRC/_gleaner_build"
if [ ! -x "$SRC/configure" ]; then
  say "autogen.sh (log: $SRC/autogen.log)"
  (cd "$SRC" && ./autogen.sh) >"$SRC/autogen.log" 2>&1 || { tail -30 "$SRC/autogen.log"; die "autogen.sh failed, see $SRC/autogen.log"; }
fi
mkdir -p "$B"
# Debian's python3 (not a pyenv or venv one found first on PATH): the daemons
# embed it and hooks run with it.
PY=${PYTHON_PREFIX:-/usr}
[ -x "$PY/bin/python3" ] && [ -x "$PY/bin/python3-config" ] || die "no $PY/bin/python3 and python3-config (python3-dev); set PYTHON_PREFIX"
cppflags=${CPPFLAGS:-}
# Releases up to v23.06.06 include <eval.h>, which Python 3.11 (Debian 12's)
# no longer has; upstream's fix (commit 1d17427c, "compile with Python 3.11")
# includes <Python.h> instead. A shim header does the same without touching SRC.
if grep -q '#include <eval.h>' "$SRC/src/lib/Libpython/pbs_python_external.c" 2>/dev/null; then
  pyinc=$("$PY/bin/python3-config" --includes | sed 's/^-I//; s/ .*//')
  if [ ! -e "$pyinc/eval.h" ]; then
    mkdir -p "$B/compat"
    printf '/* gleaner build.sh: Python >= 3.11 has no eval.h; Python.h declares PyEval_EvalCode */\n#include <Python.h>\n' >"$B/compat/eval.h"
    cppflags="-I$B/compat $cppflags"
    say "Python $("$PY/bin/python3" -c 'import sys; print(sys.version.split()[0])') has no eval.h: using the shim $B/compat/eval.h"
  fi
fi
cflags=${CFLAGS:--g -O2 -fcommon -Wno-error}
key="--prefix=$PREFIX --with-python=$PY CPPFLAGS=$cppflags CFLAGS=$cflags"
if [ ! -f "$B/Makefile" ] || [ "$(cat "$B/.gleaner-configure" 2>/dev/null)" != "$key" ]; then
  say "configure $key (log: $B/configure.log)"
  (cd "$B" && PYTHON="$PY/bin/python3" CPPFLAGS="$cppflags" CFLAGS="$cflags" \
    ../configure --prefix="$PREFIX" --with-python="$PY") \
    >"$B/configure.log" 2>&1 || { tail -30 "$B/configure.log"; die "configure failed, see $B/configure.log"; }
  echo "$key" >"$B/.gleaner-configure"
fi

# --- build and install ---------------------------------------------------------------------
say "$NICE make -j$JOBS (log: $B/make.log)"
(cd "$B" && $NICE make -j"$JOBS") >"$B/make.log" 2>&1 \
  || { grep -n -m20 -E 'error|Error' "$B/make.log" || true; tail -20 "$B/make.log"; die "make failed, see $B/make.log"; }
say "make install (log: $B/install.log)"
(cd "$B" && make install) >"$B/install.log" 2>&1 \
  || { tail -30 "$B/install.log"; die "make install failed, see $B/install.log"; }
# pbs_iff and pbs_rcp authenticate non-root users: setuid root, as INSTALL step 12 says.
if [ "$(id -u)" = 0 ]; then
  chmod 4755 "$PREFIX/sbin/pbs_iff" "$PREFIX/sbin/pbs_rcp"
else
  say "not root: run 'chmod 4755 $PREFIX/sbin/pbs_iff $PREFIX/sbin/pbs_rcp' as root for non-root users"
fi
echo "$rev $SRC" >"$stamp"
say "installed OpenPBS $version ($rev) in $PREFIX; next: scripts/openpbs/cluster.sh start (PBS_EXEC=$PREFIX)"
