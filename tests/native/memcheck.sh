#!/usr/bin/env bash
# Memory checks of the simulator core, without and with Python:
#   1. the C driver (episode_main.c) built with -O1 -g runs full NewReno, Cubic (RFC 9438's
#      arithmetic and in segments) and ideal episodes with random loss, a CCP one, an episode with every part of the model (rich.yaml:
#      shared link, cross traffic, LIA, OLIA, BALIA, wVegas, CCP, Gilbert-Elliott, PRR, in-order
#      receiver)
#      and one with expired blocks dropped, natively (every native baseline) and through
#      the observation API, and one of one-byte packets whose lanes outgrow the episode's
#      single allocation (tiny_packets.yaml), under valgrind memcheck; any error or
#      definite leak fails;
#   2. the same driver built with AddressSanitizer and UndefinedBehaviorSanitizer, on the
#      same runs and on every scenario of the fuzz corpus (tests/fuzz/corpus: accepted
#      inputs of the fuzz harness, one per kind of exercise) with every native baseline;
#   3. the Python extension under valgrind: full episodes through simulate() (rich.yaml
#      included), steps of the Gymnasium and vector environments and clones of episodes
#      in progress (PYTHONMALLOC=malloc).
# Step runs (also with the copy actions: step-copies) are repeated with every episode
# replaced by its clone every 97 steps (step-clone, step-copies-clone), under both
# checkers, and must end with the same checksum; native runs
# are repeated in pieces with a look-ahead clone of held future at each stop
# (lookahead: mps_run_until, mps_hold_future), and MinRTT's must end as its whole run.
# usage: tests/native/memcheck.sh   (PYTHON selects the interpreter with mpsched installed)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-python3}
src="$root/envs/core"
sources=("$src/sim.c" "$src/cc.c" "$src/policy.c" "$src/obs.c" "$src"/policies/*.c)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

command -v valgrind >/dev/null || { echo "memcheck: valgrind is not installed" >&2; exit 2; }

"$python" "$here/dump_episode.py" dams-bw-1-1.5 0 "$work/newreno.txt" --cc newreno --loss 0.02
"$python" "$here/dump_episode.py" dams-dynamic-2-rtt-80 1 "$work/ideal.txt" --cc ideal --loss 0.02
"$python" "$here/dump_episode.py" dams-bw-1-1.5 2 "$work/cubic.txt" --cc cubic --loss 0.01
"$python" "$here/dump_episode.py" dams-bw-1-1.5 2 "$work/cubic_segments.txt" --cc cubic --loss 0.01 \
    --cubic-arithmetic segments
"$python" "$here/dump_episode.py" dams-bw-1-1.5 9 "$work/ccp.txt" --cc ccp --loss 0.01
"$python" "$here/dump_episode.py" "$here/rich.yaml" 3 "$work/rich.txt"
"$python" "$here/dump_episode.py" "$here/rich.yaml" 5 "$work/stream.txt" --stream-sequence --drop-expired
"$python" "$here/dump_episode.py" dams-dynamic-1-rtt-40 4 "$work/expiring.txt" --drop-expired --duration 10
"$python" "$here/dump_episode.py" "$here/deep_backlog.yaml" 6 "$work/deep.txt"
"$python" "$here/dump_episode.py" "$here/on_off.yaml" 7 "$work/onoff.txt" --drop-expired
"$python" "$here/dump_episode.py" "$here/tiny_packets.yaml" 8 "$work/tiny.txt"
flags=(-std=c11 -g -Wall -Wextra -Wno-unused-parameter -I"$src")
gcc -O1 "${flags[@]}" -o "$work/episode_main" "$here/episode_main.c" "${sources[@]}" -lm

runs=(
    "newreno.txt run minrtt"
    "newreno.txt run rr"
    "ideal.txt run minrtt"
    "newreno.txt step 16 2 3 30000"
    "ideal.txt step 4 8 2 30000"
    "cubic.txt run minrtt"
    "cubic_segments.txt run minrtt"
    "cubic_segments.txt step-clone 16 2 3 30000"
    "ccp.txt run minrtt"
    "ccp.txt step 16 2 3 30000"
    "rich.txt run minrtt"
    "rich.txt run rr"
    "rich.txt step 8 8 3 30000"
    "stream.txt step 8 8 2 20000"
    "rich.txt step-clone 8 8 3 30000"
    "stream.txt step-clone 8 8 2 20000"
    "expiring.txt run minrtt"
    "onoff.txt step 4 8 2 30000"
    "tiny.txt run minrtt"
    "tiny.txt step-clone 4 8 2 20000"
    "rich.txt step-copies 8 8 3 30000"
    "stream.txt step-copies-clone 8 8 2 20000"
    "rich.txt lookahead minrtt"
    "stream.txt lookahead minrtt"
)
# every native baseline with its default parameters, on the rich, the overloaded, the
# deep-backlog and the on/off episode
while read -r policy; do
    runs+=("rich.txt run $policy" "stream.txt run $policy" "newreno.txt run $policy" "deep.txt run $policy"
           "onoff.txt run $policy" "rich.txt lookahead $policy")
done < <("$python" "$here/native_policies.py")
for r in "${runs[@]}"; do
    read -r -a args <<<"$r"
    echo "== valgrind memcheck: episode_main $r"
    valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
        "$work/episode_main" "$work/${args[0]}" "${args[@]:1}"
done

# episodes replaced by their clones every 97 steps end exactly where the originals do,
# and so do runs stopped for look-aheads
for episode in rich stream tiny; do
    for mode in step step-copies; do
        stepped=$("$work/episode_main" "$work/$episode.txt" $mode 8 8 3 30000)
        cloned=$("$work/episode_main" "$work/$episode.txt" $mode-clone 8 8 3 30000)
        echo "== clones continue as the originals ($episode, $mode): $cloned"
        [ "$stepped" = "$cloned" ] || { echo "memcheck: $episode: cloned run differs: $stepped" >&2; exit 1; }
    done
    whole=$("$work/episode_main" "$work/$episode.txt" run minrtt)
    pieces=$("$work/episode_main" "$work/$episode.txt" lookahead minrtt)
    echo "== runs stopped for look-aheads end as whole runs ($episode): $pieces"
    [ "$whole" = "$pieces" ] || { echo "memcheck: $episode: run in pieces differs: $whole" >&2; exit 1; }
done

if gcc -fsanitize=address,undefined -x c -o "$work/probe" - <<<'int main(void){return 0;}' 2>/dev/null \
   && "$work/probe"; then
    gcc -O1 "${flags[@]}" -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
        -o "$work/episode_main_asan" "$here/episode_main.c" "${sources[@]}" -lm
    for r in "${runs[@]}"; do
        read -r -a args <<<"$r"
        echo "== ASan+UBSan: episode_main $r"
        "$work/episode_main_asan" "$work/${args[0]}" "${args[@]:1}"
    done
    mapfile -t policies < <("$python" "$here/native_policies.py")
    for scenario in "$root"/tests/fuzz/corpus/*.json; do
        name=$(basename "$scenario" .json)
        "$python" "$here/dump_episode.py" "$scenario" 1 "$work/$name.txt"
        echo "== ASan+UBSan: fuzz corpus $name: every native baseline, and steps"
        for policy in "${policies[@]}"; do
            read -r -a args <<<"$policy"
            "$work/episode_main_asan" "$work/$name.txt" run "${args[@]}"
        done
        "$work/episode_main_asan" "$work/$name.txt" step 4 8 2 5000
        "$work/episode_main_asan" "$work/$name.txt" step-clone 4 8 2 5000
        "$work/episode_main_asan" "$work/$name.txt" step-copies-clone 4 8 2 5000
        "$work/episode_main_asan" "$work/$name.txt" lookahead minrtt
    done
else
    echo "== ASan+UBSan: not available with this compiler, skipped"
fi

echo "== valgrind memcheck: Python extension (simulate, env, vector env, clones)"
# CPython and the dynamic loader report errors of their own under valgrind; an error
# counts against mpsched when any frame of its stack lies in the extension module.
PYTHONMALLOC=malloc valgrind --leak-check=no --xml=yes --xml-file="$work/python.xml" \
    "$python" "$here/python_episode.py"
"$python" "$here/valgrind_errors.py" "$work/python.xml" envs/_core
echo "memcheck: all clean"
