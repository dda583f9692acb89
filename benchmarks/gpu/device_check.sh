#!/usr/bin/env bash
# Every GPU figure in one run on a machine with a GPU: install, the GPU tests, the ONNX node tests through GPU,
# real models against the CPU, the server on GPU, compile time cold and with CACHE_DIR, and the performance table
# against PyTorch. Run from the repository root there:
#
#   bash benchmarks/gpu/device_check.sh            # everything (~9 minutes on an H100)
#   bash benchmarks/gpu/device_check.sh device     # the device's correctness checks only
#   bash benchmarks/gpu/device_check.sh perf       # the performance table and the kernel profile only
#   bash benchmarks/gpu/device_check.sh quick      # GPU tests, kernel profile, compile cache, table (~7 min)
#   bash benchmarks/gpu/device_check.sh wheels     # only install the wheels brought along (openvino's, alone)
#   bash benchmarks/gpu/device_check.sh cpu        # the host CPU: thread sweep and profile beside openvino
#
# Packages the machine lacks go in .whl/ as wheels (starlette, uvicorn, onednn-cpu-gomp; onnx 1.23.2 to match CI's);
# openvino's (59 MB) in .ovwhl/, carried in a `wheels` run of its own before a `cpu` run. Model files
# of PyPI packages it lacks in .gpumodels/ (silero_vad.onnx, ch_PP-OCRv4_det_infer.onnx, ch_PP-OCRv4_rec_infer.onnx).
# Logs go to $OUT (default /tmp/vinerun-gpu); each step prints the end of its log and its time.
set -u
OUT=${OUT:-/tmp/vinerun-gpu}
PY=${PY:-python3}
WHAT=${1:-all}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
START=$(date +%s)

step() {  # step NAME SECONDS COMMAND...: run with a time limit, keep the log, show its end
  local name=$1 limit=$2 t0 rc
  shift 2
  t0=$(date +%s)
  echo "=== $name (limit ${limit}s, at $(( t0 - START ))s)"
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  tail -n "${TAIL:-30}" "$OUT/$name.log" | cut -c1-300
  echo "--- $name: rc=$rc in $(( $(date +%s) - t0 ))s"
}

mkdir -p /tmp/site && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
for wheel in .whl/*.whl .ovwhl/*.whl; do  # each once while the machine stays warm
  [ -e "$wheel" ] && [ ! -e "/tmp/site/.done-$(basename "$wheel")" ] || continue
  case $(basename "$wheel") in
    onednn*)  # its libdnnl.so goes to <prefix>/lib, which a --target install would lose
      PIP_BREAK_SYSTEM_PACKAGES=1 $PY -m pip install -q --no-index --no-deps "$wheel" ;;
    *) $PY -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site "$wheel" ;;
  esac && touch "/tmp/site/.done-$(basename "$wheel")"
done
[ "$WHAT" = wheels ] && { ls /tmp/site; exit 0; }
step install 120 $PY -m pip install --no-deps --no-build-isolation --no-index -e .
$PY - <<'PY'
import torch, onnx, vinerun as ov
core = ov.Core()
print("torch", torch.__version__, "cuda", torch.version.cuda, "onnx", onnx.__version__, "| devices", core.available_devices)
for key in ("FULL_DEVICE_NAME", "DEVICE_ARCHITECTURE", "DEVICE_TYPE", "GPU_DEVICE_TOTAL_MEM_SIZE",
            "GPU_EXECUTION_UNITS_COUNT", "OPTIMIZATION_CAPABILITIES", "DEVICE_UUID", "RANGE_FOR_STREAMS"):
    print(f"  {key}: {core.get_property('GPU', key)}")
PY

if [ "$WHAT" = cpu ]; then  # the many-core CPU beside openvino (issue 22): its wheel comes in a run of its own
  { lscpu; grep -o -w -E "amx_bf16|amx_int8|amx_tile|avx512_bf16|avx512_vnni" /proc/cpuinfo | sort -u; } >"$OUT/cpu.log"
  grep -E "^Model name|^CPU\(s\)|^Thread|^Core|^Socket|^NUMA node|^L2|^L3|amx" "$OUT/cpu.log"
  TAIL=40 step sweep_resnet50 200 $PY benchmarks/thread_sweep.py --models resnet50 --seconds 0.5
  # the same points with every call on the requested threads: the thread governor's share in them
  VINERUN_CPU_GOVERNOR=0 TAIL=40 step sweep_fixed 100 $PY benchmarks/thread_sweep.py --models resnet50 \
    --threads 2 4 --seconds 0.5
  TAIL=40 step sweep_small 150 $PY benchmarks/thread_sweep.py --models mobilenetv2 bert demo --threads "$(nproc)" \
    --seconds 0.5
  TAIL=40 step profile_resnet50_bf16 60 $PY benchmarks/zoo_profile.py resnet50 --precision bf16 --threads 2 \
    --top 10 --folder /tmp/vinerun_zoo
  # BERT bf16 THROUGHPUT unpinned (the default pins, as openvino): what pinning gives the streams
  TAIL=20 step sweep_bert_unpinned 80 $PY benchmarks/thread_sweep.py --models bert --threads "$(nproc)" \
    --seconds 0.5 --config ENABLE_CPU_PINNING=NO
  # one thread, as each THROUGHPUT stream runs ($OUT returns 8 files: the logs above fill it)
  TAIL=25 step stream_bert_bf16 60 $PY benchmarks/zoo_profile.py bert --precision bf16 --threads 1 --top 6 \
    --folder /tmp/vinerun_zoo
fi
if [ "$WHAT" = quick ]; then
  step gpu_tests 90 $PY -m pytest tests/gpu -n 4 -p no:cacheprovider -q -rs
  step compile_cache 60 $PY benchmarks/gpu/cache_check.py --models resnet50
fi
if [ "$WHAT" = all ] || [ "$WHAT" = device ]; then
  step gpu_tests 90 $PY -m pytest tests/gpu -n 4 -p no:cacheprovider -q -rs
  step onnx_node_tests 80 $PY benchmarks/gpu/onnx_node_tests.py --no-cpu --jobs 12 --json "$OUT/onnx_node_tests.json"
  step compile_cache 60 $PY benchmarks/gpu/cache_check.py --models resnet50
  step serve 40 $PY benchmarks/gpu/serve_check.py --device GPU
  step model_checks 90 $PY benchmarks/gpu/model_checks.py --models-dir .gpumodels
  step devices_cli 20 vinerun devices
fi
if [ "$WHAT" = all ] || [ "$WHAT" = perf ] || [ "$WHAT" = quick ]; then
  TAIL=60 step kernel_profile 90 $PY benchmarks/gpu/kernel_profile.py --models resnet50 bert --batches 1 64 --top 8
  TAIL=60 step bench 300 $PY benchmarks/gpu/bench.py --quick --models resnet50 bert mobilenetv2 --json "$OUT/bench.json"
fi
echo "=== done in $(( $(date +%s) - START ))s; logs in $OUT"
