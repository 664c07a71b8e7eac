// Package openclaw holds docket's OpenClaw plugin (index.js, its
// manifest and package.json), embedded so that `docket install --runtime
// openclaw` can write it where OpenClaw loads it.
package openclaw

import "embed"

// Files are the plugin's files, at the top of the FS.
//
//go:embed index.js openclaw.plugin.json package.json
var Files embed.FS

// Names lists the plugin's files.
var Names = []string{"index.js", "openclaw.plugin.json", "package.json"}

// ID is the plugin id of openclaw.plugin.json.
const ID = "docket"
