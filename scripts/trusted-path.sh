# Sourced first by every script that package.json runs. `npm run` puts the node_modules/.bin of every
# ancestor directory first on PATH: for a checkout under /tmp, `/tmp/node_modules/.bin`, which any local
# user (a sandbox's uid) may create and fill with a `node` or a `git` of its own. As root, PATH keeps
# only the directories that no one but root can write or create (the rule of src/process/trusted-path.ts,
# which the launcher checks again); the scripts then run tools by their paths in node_modules, never
# through `npm run` or `npx`, which would put those directories back.
# Only bash builtins and absolute paths are used until PATH is clean.
if [ "${EUID:-$(/usr/bin/id -u)}" = 0 ]; then
  _trusted_chain() { # $1 a path that exists; each component root's and closed to others (a link: root's; sticky above is fine)
    local p=$1 below=0 owner mode kind
    while :; do
      IFS='|' read -r owner mode kind < <(/usr/bin/stat -c '%u|%a|%F' -- "$p") || return 1
      [ "$owner" = 0 ] || return 1
      mode=$((8#$mode))
      if [ "$kind" != "symbolic link" ] && (((mode & 8#022) != 0)) && ! ((below && (mode & 8#1000))); then return 1; fi
      [ "$p" = / ] && return 0
      p=${p%/*}
      p=${p:-/}
      below=1
    done
  }
  _trusted_dir() { # the entry as written (links not followed) and where it leads
    local real
    real=$(/usr/bin/realpath -e -- "$1") && _trusted_chain "$1" && _trusted_chain "$real"
  }
  _kept=()
  _dropped=()
  IFS=: read -ra _entries <<<"$PATH"
  for _d in "${_entries[@]}"; do
    if [[ $_d == /* ]] && [ -d "$_d" ] && _trusted_dir "$_d"; then
      _kept+=("$_d")
    elif [ -e "$_d" ]; then
      _dropped+=("$_d")
    fi
  done
  PATH=$(IFS=:; echo "${_kept[*]}")
  export PATH
  if ((${#_dropped[@]} > 0)); then echo "PATH: left out, as root, directories another user can write: ${_dropped[*]}" >&2; fi
  unset _d _kept _dropped _entries
  unset -f _trusted_dir _trusted_chain
fi
