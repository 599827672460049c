#!/usr/bin/env bash
# Download, into .whl/ (git-ignored), the wheels the GPU machine's image lacks for the search
# run (experiments/device/search_gpu.sh). The image holds jax 0.11.2 with CUDA, flax, optax,
# numpy, matplotlib, seaborn, absl-py, attrs, wrapt, cloudpickle and typing-extensions; the
# rest travels as wheels for CPython 3.12 on x86-64 (about 9 MB), pinned to uv.lock's versions.
# Run from the repository root, on a machine that reaches PyPI: bash experiments/device/fetch_wheels.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

locked() {  # the version uv.lock pins for package $1
    awk -v name="$1" '$0 == "name = \"" name "\"" {getline; gsub(/version = |"/, ""); print; exit}' uv.lock
}

wheels=()
for name in gymnax gymnasium farama-notifications distrax tfp-nightly dm-tree decorator gast \
            mctx chex toolz; do
    version=$(locked "$name")
    [ -n "$version" ] || { echo "fetch_wheels: $name is not in uv.lock" >&2; exit 1; }
    wheels+=("$name==$version")
done

rm -rf .whl && mkdir -p .whl
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 \
         manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$p")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${platforms[@]}" -d .whl "${wheels[@]}"
ls .whl
du -sh .whl
