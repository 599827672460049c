#!/usr/bin/env bash
# The search's GPU checks, prepared as one device call (experiments/device/README.md):
#   1. simulations per second of the honest and oracle search at GPU batch sizes
#      (`hm-bench search`, one line per part and per search size);
#   2. the search trainer from the default PPO policy for TRAIN_MINUTES (compiling included),
#      then its end-of-run evaluation: 256 episodes from stage 1, greedy and with its own
#      8-simulation honest search.
# Every stage runs under its own `timeout`, so a slow stage costs its own figures, not the
# call's. Outputs land in $OUT: machine.txt, bench_search.txt, train.log, eval_final.json, eval_final_search.json.
#
# Sizes come from the environment (defaults: the GPU's): BATCHES, SIMS, TRAIN_ENVS,
# TRAIN_MINUTES, EVAL_EPISODES, TRAIN_ARGS (extra hm-train flags). SMALL=1 sets the CPU dry
# run's sizes. PYTHON picks the interpreter (default python3, the image's).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:?set OUT to the folder for the outputs (the device sets it)}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
work=$(mktemp -d)  # the installed wheels and the trainer's checkpoints
if [ "${SMALL:-0}" = 1 ]; then
    BATCHES=${BATCHES:-64} SIMS=${SIMS:-8} TRAIN_ENVS=${TRAIN_ENVS:-32}
    TRAIN_MINUTES=${TRAIN_MINUTES:-1.5} EVAL_EPISODES=${EVAL_EPISODES:-16}
fi
BATCHES=${BATCHES:-16384}
SIMS=${SIMS:-8 32}
TRAIN_ENVS=${TRAIN_ENVS:-4096}
TRAIN_MINUTES=${TRAIN_MINUTES:-3.5}
EVAL_EPISODES=${EVAL_EPISODES:-256}
TRAIN_ARGS=${TRAIN_ARGS:---lr 1e-4 --search-considered 2 --search-target-value-scale 0.02}

# The wheels the image lacks (fetch_wheels.sh), ahead of the image's own packages; our
# packages from their sources.
if ls .whl/*.whl > /dev/null 2>&1; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$work/site" .whl/*.whl || exit 1
fi
export PYTHONPATH=$work/site:packages/hackmatrix-env/src:packages/hackmatrix-train/src:benchmarks
export PYTHONUNBUFFERED=1 WANDB_MODE=disabled

# our console scripts, by their functions (the sources are on PYTHONPATH, not installed)
hm_bench=(-c "import sys; from hackmatrix_bench.bench import main; sys.argv[0] = 'hm-bench'; main()")
search_trainer=(experiments/search_trainer.py)  # hm-train's flags with the search trainer

{
    date -u
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 || true
    "$PYTHON" -c "import jax, flax, mctx, chex; print('jax', jax.__version__, jax.devices()); print('flax', flax.__version__, 'mctx', mctx.__version__, 'chex', chex.__version__)"
    echo "BATCHES=$BATCHES SIMS=$SIMS TRAIN_ENVS=$TRAIN_ENVS TRAIN_MINUTES=$TRAIN_MINUTES EVAL_EPISODES=$EVAL_EPISODES"
    echo "TRAIN_ARGS=$TRAIN_ARGS"
} 2>&1 | tee "$OUT/machine.txt"

for batch in $BATCHES; do
    # shellcheck disable=SC2086
    timeout 200 "$PYTHON" "${hm_bench[@]}" search --batch "$batch" --sims $SIMS --repeats 3 \
        2>&1 | tee -a "$OUT/bench_search.txt"
done

# shellcheck disable=SC2086
timeout $(( ${TRAIN_MINUTES%.*} * 60 + 180 )) "$PYTHON" "${search_trainer[@]}" \
    --init-params policies/default-cpu-42m-s1-vf0125 --num-envs "$TRAIN_ENVS" --num-steps 16 \
    --search-simulations 8 --time-budget "$TRAIN_MINUTES" --final-eval-episodes "$EVAL_EPISODES" \
    --checkpoint-dir "$work/ckpt" --run-name search-gpu --no-wandb $TRAIN_ARGS \
    2>&1 | tee "$OUT/train.log"
cp "$work/ckpt/search-gpu/eval_final"*.json "$OUT/" 2>/dev/null \
    || echo "search_gpu: no eval_final.json (the run did not finish)" | tee -a "$OUT/train.log"
