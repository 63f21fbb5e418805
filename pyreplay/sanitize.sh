#!/bin/sh
# Build pyreplay's C core with AddressSanitizer and UndefinedBehaviorSanitizer and run its test
# driver (tests_c/test_core.c). Usage: pyreplay/sanitize.sh [seconds of the thread test] [out dir]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
seconds=${1:-1}
out=${2:-$(mktemp -d)}
cc=${CC:-gcc}
"$cc" -std=c99 -Wall -Wextra -Werror -O1 -g -fno-omit-frame-pointer \
    -fsanitize=address,undefined -fno-sanitize-recover=all \
    -o "$out/test_core" "$here/tests_c/test_core.c" "$here/replay.c" "$here/sumtree.c" -lm -lpthread
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 "$out/test_core" "$seconds"
