# Sourced by .ci/run before the tests: the dashboard's browser test
# (server/dashboard) drives Debian's Chromium at /usr/bin/chromium. It skips
# itself when Chromium is missing, so CI installs it here to make sure the
# test runs. Fonts come along so text renders in headless mode.
if [ ! -x /usr/bin/chromium ]; then
  echo "== installing chromium for the dashboard browser test"
  if [ "$(id -u)" = 0 ]; then _sluice_root=""; else _sluice_root="sudo"; fi
  $_sluice_root apt-get update -qq
  $_sluice_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core fonts-liberation >/dev/null
  unset _sluice_root
fi
dpkg-query -W -f='chromium ${Version} at /usr/bin/chromium\n' chromium
