#!/usr/bin/env bash
# Launch tinytrain. Relaunching the same command continues from the newest checkpoint.
#
# Environment (all optional):
#   PYTHON              interpreter (default: python3)
#   TINYTRAIN_CKPT_DIR  checkpoint directory (default: checkpoints, relative to the current dir)
#   TINYTRAIN_CONFIG    config file (default: config.json next to this script)
# Arguments are passed on to train.py, e.g. `./run.sh --steps 200 --device cuda`.
set -euo pipefail

main() {
    local here python ckpt_dir config snapshot arg
    here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
    python="${PYTHON:-python3}"
    ckpt_dir="${TINYTRAIN_CKPT_DIR:-checkpoints}"
    config="${TINYTRAIN_CONFIG:-$here/config.json}"
    snapshot="$ckpt_dir/config.json"

    for arg in "$@"; do
        case "$arg" in
            --ckpt-dir | --ckpt-dir=* | --config | --config=*)
                # The config check below is tied to these two; a flag would bypass it.
                echo "run.sh: set TINYTRAIN_CKPT_DIR / TINYTRAIN_CONFIG instead of $arg" >&2
                return 2
                ;;
            *) ;;
        esac
    done
    if [[ ! -f "$config" ]]; then
        echo "run.sh: config file not found: $config" >&2
        return 2
    fi
    mkdir -p -- "$ckpt_dir"

    # The checkpoints keep a copy of the config that produced them, so that relaunching with an
    # edited config is refused here instead of silently diverging from the original run.
    if [[ -e "$snapshot" ]]; then
        if ! cmp -s -- "$config" "$snapshot"; then
            echo "run.sh: $config differs from $snapshot, which produced the checkpoints" >&2
            echo "run.sh: restore that config or use a fresh TINYTRAIN_CKPT_DIR" >&2
            return 2
        fi
    else
        local tmp="$snapshot.tmp-$$"
        if ! cp -- "$config" "$tmp" || ! mv -f -- "$tmp" "$snapshot"; then
            rm -f -- "$tmp"
            echo "run.sh: could not copy $config to $snapshot" >&2
            return 1
        fi
    fi

    # exec, so a signal sent to this PID (a scheduler's SIGTERM, a gate's SIGKILL) reaches
    # python itself; stdin is closed because training must never wait for input.
    exec "$python" -u "$here/train.py" --config "$config" --ckpt-dir "$ckpt_dir" "$@" </dev/null
}

main "$@"; exit
