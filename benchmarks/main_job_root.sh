#!/usr/bin/env bash
# Time and disk of `bash ci/main.sh` on a fresh Debian 12 root (issue 41 item 4), for one commit:
#   bash benchmarks/main_job_root.sh <commit> <out.json> [<root-dir>]
# A pristine `debootstrap --variant=minbase bookworm` root (.ci/run's cached tarball when there is
# one, else debootstrap), the host's apt sources, CA certificates and pip configuration carried in
# as .ci/run does (the local folders pip reads bound read-only), a clean clone of the commit; then
# ci/main.sh inside (chroot, in a private mount namespace), timed, and `du` of the root before and
# after: the new files (apt's downloaded packages, pip's cache and .venv included). Run as root.
set -euo pipefail
commit=${1:?commit}; out=${2:?out.json}; work=${3:-/work/kernels-root}
repo=$(cd "$(dirname "$0")/.." && pwd)
root="$work/root-$commit"
[[ -e "$root" ]] && { echo "main_job_root: $root exists; remove it first" >&2; exit 2; }
mkdir -p "$root"
tarball=$(ls /var/cache/aotwheel-ci/bookworm-minbase-*.tar 2>/dev/null | head -n1 || true)
if [[ -n "$tarball" ]]; then
  tar --numeric-owner -C "$root" -xf "$tarball"
else
  debootstrap --variant=minbase bookworm "$root" >/dev/null
fi
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
[[ -f /etc/hosts ]] && cp -L /etc/hosts "$root/etc/hosts"
rm -f "$root/etc/apt/sources.list"
cp -L /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/" 2>/dev/null || true
[[ -f /etc/apt/sources.list ]] && cp -L /etc/apt/sources.list "$root/etc/apt/sources.list"
cp -RL /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
[[ -f /etc/ssl/certs/ca-certificates.crt ]] && mkdir -p "$root/etc/ssl/certs" && cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
for f in /etc/pip.conf /root/.config/pip /root/.pip; do
  [[ -e "$f" ]] || continue
  mkdir -p "$root$(dirname "$f")" && cp -RL "$f" "$root$(dirname "$f")/"
done
binds=()
while read -r path; do
  path=${path#file://}; path=${path%/}
  [[ "$(basename "$path")" == simple ]] && path=$(dirname "$path")
  [[ -d "$path" && "$path" == /opt/* ]] && binds+=("$path")
done < <({ cat /etc/pip.conf /etc/xdg/pip/*.conf /root/.config/pip/*.conf /root/.pip/*.conf 2>/dev/null
           env | grep '^PIP_' | cut -d= -f2-; } | grep -oE '(file://)?/[^[:space:]"]+' | sort -u)
git clone -q --no-hardlinks "$repo" "$root/root/aotwheel"
git -C "$root/root/aotwheel" checkout -q --detach "$commit"
before=$(du -sxB1 "$root" | cut -f1)
pipenv=()
while IFS='=' read -r name value; do [[ "$name" == PIP_* ]] && pipenv+=("$name=$value"); done < <(env)
start=$(date +%s.%N)
set +e
unshare --mount --propagation private bash -c '
  set -e; root=$1; shift
  mount -t proc proc "$root/proc"; mount --bind /dev "$root/dev"; mount --bind /dev/pts "$root/dev/pts"
  for p in "$@"; do [[ $p == /* ]] || break; mkdir -p "$root$p"; mount --bind -o ro "$p" "$root$p"; shift; done
  exec chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 TERM=dumb "$@" \
    /bin/bash -c "cd /root/aotwheel && bash ci/main.sh"
' inner "$root" "${binds[@]}" "${pipenv[@]}" >"$work/main-$commit.log" 2>&1
rc=$?
set -e
end=$(date +%s.%N)
after=$(du -sxB1 "$root" | cut -f1)
sizeof() { du -sxB1 "$root$1" 2>/dev/null | cut -f1 || echo 0; }
python3 - "$out" "$commit" "$rc" "$start" "$end" "$before" "$after" "$(sizeof /root/aotwheel/.venv)" \
  "$(sizeof /var/cache/apt/archives)" "$(sizeof /root/.cache/pip)" "$(sizeof /var/lib/apt/lists)" <<'PY'
import json, sys
out, commit, rc, start, end, before, after, venv, debs, pipcache, lists = sys.argv[1:]
doc = {"commit": commit, "exit": int(rc), "wall_s": round(float(end) - float(start), 1),
       "new_bytes": int(after) - int(before), "venv_bytes": int(venv or 0), "apt_archives_bytes": int(debs or 0),
       "pip_cache_bytes": int(pipcache or 0), "apt_lists_bytes": int(lists or 0),
       "command": "bash ci/main.sh in a fresh debootstrap --variant=minbase bookworm root (benchmarks/main_job_root.sh)"}
json.dump(doc, open(out, "w"), indent=2)
print(json.dumps(doc))
PY
