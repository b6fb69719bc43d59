#!/usr/bin/env bash
# Runs every fuzz target (or those named) for SECONDS each, at the lowest CPU
# priority, from the seeds in seeds/TARGET and the corpus libFuzzer keeps in
# corpus/TARGET; prints each target's runs. Needs a nightly toolchain and
# cargo-fuzz (cargo install cargo-fuzz). A crash is saved in
# artifacts/TARGET/ and stops that target with a non-zero status.
#
#   fuzz/run.sh 600                 # ten minutes each
#   fuzz/run.sh 60 http1_chunked    # one target, a minute
set -u
cd "$(dirname "$0")"
secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(sse ndjson http1_head http1_chunked prometheus events reader)
fi
# Built once; each target's binary then runs as built (editing the crates
# meanwhile does not rebuild it).
nice -n 19 cargo +nightly fuzz build -O || exit 1
bin=target/$(rustc +nightly -vV | sed -n 's/^host: //p')/release
status=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "seeds/$t" "artifacts/$t"
    log="fuzz-$t.log"
    nice -n 19 "$bin/$t" "corpus/$t" "seeds/$t" -artifact_prefix="artifacts/$t/" \
        -max_total_time="$secs" -max_len=8192 -print_final_stats=1 >"$log" 2>&1
    rc=$?
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    echo "$t: exit $rc, ${runs:-?} inputs run in ${secs}s (log fuzz/$log)"
    [ $rc -eq 0 ] || status=1
done
exit $status
