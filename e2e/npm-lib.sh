# e2e/npm-lib.sh — sourced by e2e/install.sh and e2e/install-openclaw.sh:
# what both do to put pinned npm packages and a pinned Node (the npm
# package node-linux-<arch>) under one prefix, from the npm registry only.
# The caller sets `label` (its name in messages) before sourcing.

# pins_current DIR PINS BIN TOOL...: DIR holds exactly PINS and every TOOL
# is linked in BIN.
pins_current() {
	local dir=$1 pins=$2 bin=$3 t
	shift 3
	[ -f "$dir/pins" ] && [ "$(cat "$dir/pins")" = "$pins" ] || return 1
	for t in "$@"; do
		[ -x "$bin/$t" ] || return 1
	done
}

# need_npm: Debian's nodejs and npm when there is no npm (they only run
# the installs; the tests run the pinned Node).
need_npm() {
	command -v npm >/dev/null 2>&1 && return
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
}

npmi() { npm install --no-audit --no-fund --no-save --loglevel=error "$@"; }

# install_node DIR VERSION: the pinned Node under DIR/node; sets node_bin
# to its bin directory and puts it first on PATH.
install_node() {
	local arch
	case "$(uname -m)" in
	x86_64) arch=x64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) echo "$label: unsupported machine $(uname -m)" >&2; exit 1 ;;
	esac
	npmi --prefix "$1/node" "node-linux-$arch@$2"
	node_bin=$1/node/node_modules/node-linux-$arch/bin
	export PATH=$node_bin:$PATH
}
