#!/usr/bin/env bash
# Renders cloud-init.yaml.tmpl with the agent config of a Bicep deployment.
#
#   deploy/vmss/render-cloud-init.sh -g <resource-group> -n <deployment-name> -p <agent-package> > cloud-init.yaml
#   deploy/vmss/render-cloud-init.sh --config agent.json -p <agent-package> > cloud-init.yaml
#
# <agent-package> is what `npm install -g` takes: a published name@version or a tarball URL
# (npm pack builds one).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
group='' deployment='' config='' package=''
usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -g) group=${2:?}; shift 2 ;;
    -n) deployment=${2:?}; shift 2 ;;
    --config) config=${2:?}; shift 2 ;;
    -p) package=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "render-cloud-init.sh: unknown argument: $1" >&2; usage ;;
  esac
done
[ -n "$package" ] || { echo 'render-cloud-init.sh: -p <agent-package> is required' >&2; exit 2; }
if [ -n "$config" ]; then
  json=$(cat "$config")
elif [ -n "$group" ] && [ -n "$deployment" ]; then
  json=$(az deployment group show -g "$group" -n "$deployment" --query properties.outputs.agentConfig.value -o json)
else
  echo 'render-cloud-init.sh: give -g and -n (a deployment) or --config (a file)' >&2; exit 2
fi
printf '%s' "$json" | jq -e '.sinks | length > 0' >/dev/null || {
  echo 'render-cloud-init.sh: the agent config has no sinks: is it the agentConfig output?' >&2; exit 1; }
b64=$(printf '%s\n' "$json" | base64 -w0)
case "$package" in *"'"*|*$'\n'*) echo 'render-cloud-init.sh: the package name must not contain quotes or newlines' >&2; exit 2 ;; esac
sed -e "s|@AGENT_CONFIG_B64@|${b64}|" -e "s|@AGENT_PACKAGE@|${package//|/\\|}|" "$here/cloud-init.yaml.tmpl"
