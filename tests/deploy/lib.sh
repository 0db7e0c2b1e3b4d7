# Shared by the deploy test scripts (sourced; set `me` first): messages,
# exit codes (1 fails, 77 skips) and Debian's python3 with PyYAML.
fail() { echo "$me: FAIL: $*" >&2; exit 1; }
skip() { echo "$me: SKIP: $*" >&2; exit 77; }
say() { echo "$me: $*"; }

# Sets py to a python3 that has the yaml module, or skips.
need_python_yaml() {
  py=python3
  [ -x /usr/bin/python3 ] && py=/usr/bin/python3
  command -v "$py" >/dev/null || skip "python3 not found"
  "$py" -c 'import yaml' 2>/dev/null || skip "$py has no yaml module (apt-get install python3-yaml)"
}
