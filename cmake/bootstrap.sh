#!/bin/sh
# Sets up stepsim on a fresh Debian machine (as root) and builds it into build/.
# Installs only Debian packages; the CUDA toolkit, when present, is used as found.
set -eu
cd "$(dirname "$0")/.."

packages="cmake ninja-build g++ libboost-graph-dev libeigen3-dev nlohmann-json3-dev \
libcli11-dev zlib1g-dev libopenmpi-dev openmpi-bin libgtest-dev libgmock-dev libbenchmark-dev \
qt6-base-dev libqt6charts6-dev libqt6opengl6-dev libxkbcommon-dev libgl-dev \
python3-dev pybind11-dev python3-pytest python3-pandas python3-matplotlib"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "bootstrap: installing$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

[ -x /usr/local/cuda/bin/nvcc ] && PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTEPSIM_WERROR=ON >/dev/null
cmake --build build -j "$(nproc)"
