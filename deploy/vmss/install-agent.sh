#!/usr/bin/env bash
# For an existing scale set, through the Custom Script Extension (customData cannot be changed
# on running instances): writes the config, installs Node 24 and the agent, starts the service.
#
#   install-agent.sh <agent-config-base64> <agent-package>
set -euo pipefail
config_b64=${1:?usage: install-agent.sh <agent-config-base64> <agent-package>}
package=${2:?usage: install-agent.sh <agent-config-base64> <agent-package>}
here=$(cd "$(dirname "$0")" && pwd)
install -d -m 0755 /etc/scheduled-events-forwarder
printf '%s' "$config_b64" | base64 -d > /etc/scheduled-events-forwarder/agent.json
# The unit is the one cloud-init.yaml.tmpl writes.
sed -n '/^      \[Unit\]/,/^      WantedBy/p' "$here/cloud-init.yaml.tmpl" | sed 's/^      //' > /etc/systemd/system/scheduled-events-forwarder.service
command -v npm >/dev/null || (apt-get update && apt-get install -y npm)
npm install --global node@24
npm install --global "$package"
systemctl daemon-reload
systemctl enable --now scheduled-events-forwarder.service
systemctl restart scheduled-events-forwarder.service
