package hooks

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// ToolKind is docket's own name for what a tool call does, whatever the
// runtime calls the tool. The judge, the gate and the ledger reason about
// kinds; only this file knows the runtimes' tool names.
type ToolKind string

const (
	KindShell     ToolKind = "shell"      // runs a shell command
	KindFileWrite ToolKind = "file_write" // writes (or deletes) a whole file
	KindFileEdit  ToolKind = "file_edit"  // edits part of a file
	KindPatch     ToolKind = "patch"      // applies a multi-file patch
	KindRead      ToolKind = "read"       // reads a file or lists a directory
	KindSearch    ToolKind = "search"     // searches the file tree (glob, grep)
	KindFetch     ToolKind = "fetch"      // reaches the network (fetch, web search)
	KindMCP       ToolKind = "mcp"        // a tool of an MCP server
	KindOther     ToolKind = "other"      // anything else
)

// Writes reports whether calls of kind k always modify files. A shell
// call may or may not: its command says.
func (k ToolKind) Writes() bool {
	return k == KindFileWrite || k == KindFileEdit || k == KindPatch
}

// toolKinds maps each runtime's built-in tool names onto kinds. The
// names do not collide across runtimes, so one table serves all four:
//
//	Claude Code  Bash; Write; Edit, MultiEdit, NotebookEdit; Read,
//	             NotebookRead, LS; Glob, Grep; WebFetch, WebSearch
//	Codex CLI    Bash, shell, exec_command, local_shell, container.exec,
//	             unified_exec; apply_patch
//	Gemini CLI   run_shell_command; write_file; replace, edit; read_file,
//	             read_many_files, list_directory; glob,
//	             search_file_content, grep, grep_search; web_fetch,
//	             google_web_search
//	Cursor       Bash and Edit (docket's names for its shell and
//	             file-edit events); Shell, run_terminal_cmd; Write,
//	             Delete, delete_file; edit_file, search_replace; Read,
//	             read_file, list_dir; Grep, grep_search, file_search,
//	             codebase_search; web_search
//	OpenClaw     exec; write; edit, apply_patch; read, ls
//
// MCP tools are mcp__<server>__<tool> (Claude Code, Codex, Cursor); Gemini
// CLI names them mcp_<server>_<tool> (Event.MCPName) and OpenClaw
// <server>__<tool> (OpenClawMCPName).
var toolKinds = table[ToolKind]{
	// Claude Code
	{"Bash", KindShell}, {"Write", KindFileWrite},
	{"Edit", KindFileEdit}, {"MultiEdit", KindFileEdit}, {"NotebookEdit", KindFileEdit},
	{"Read", KindRead}, {"NotebookRead", KindRead}, {"LS", KindRead},
	{"Glob", KindSearch}, {"Grep", KindSearch},
	{"WebFetch", KindFetch}, {"WebSearch", KindFetch},
	// Codex CLI
	{"shell", KindShell}, {"exec_command", KindShell}, {"local_shell", KindShell},
	{"container.exec", KindShell}, {"unified_exec", KindShell},
	{"apply_patch", KindPatch},
	// Gemini CLI
	{"run_shell_command", KindShell}, {"write_file", KindFileWrite},
	{"replace", KindFileEdit}, {"edit", KindFileEdit},
	{"read_file", KindRead}, {"read_many_files", KindRead}, {"list_directory", KindRead},
	{"glob", KindSearch}, {"search_file_content", KindSearch}, {"grep", KindSearch}, {"grep_search", KindSearch},
	{"web_fetch", KindFetch}, {"google_web_search", KindFetch},
	// Cursor
	{"Shell", KindShell}, {"run_terminal_cmd", KindShell},
	{"Delete", KindFileWrite}, {"delete_file", KindFileWrite},
	{"edit_file", KindFileEdit}, {"search_replace", KindFileEdit},
	{"list_dir", KindRead}, {"file_search", KindSearch}, {"codebase_search", KindSearch},
	{"web_search", KindFetch},
	// OpenClaw (plugin hooks, not hook JSON: adapters/openclaw)
	{"exec", KindShell}, {"read", KindRead}, {"write", KindFileWrite}, {"ls", KindRead},
}

// KindOf maps a tool name, as any runtime sends it, onto a ToolKind.
func KindOf(tool string) ToolKind {
	if k, ok := toolKinds.lookup(tool); ok {
		return k
	}
	if strings.HasPrefix(tool, "mcp__") {
		return KindMCP
	}
	return KindOther
}

// MCPName is the call's MCP tool in Claude Code's form,
// mcp__<server>__<tool> (also Codex's), so that what is written for one
// MCP tool applies to it under every runtime: the tool's own name when it
// has that form, else the one the runtime's word for it makes (Gemini
// CLI calls the tool mcp_<server>_<tool> and names both parts in its
// mcp_context); "" for a call that is not an MCP server's.
func (e *Event) MCPName() string {
	if strings.HasPrefix(e.ToolName, "mcp__") {
		return e.ToolName
	}
	if e.MCPServer != "" && e.MCPTool != "" {
		return "mcp__" + e.MCPServer + "__" + e.MCPTool
	}
	return ""
}

// OpenClawMCPName is the MCP name, mcp__<server>__<tool>, of a tool
// OpenClaw names <server>__<tool>: the model-facing name it gives each
// tool of a bundled MCP server (its buildSafeToolName: both parts of
// [A-Za-z0-9_-], each starting with a letter), which no built-in OpenClaw
// tool has. "" for any other name.
func OpenClawMCPName(tool string) string {
	server, rest, ok := strings.Cut(tool, "__")
	if !ok || !safeMCPPart(server) || !safeMCPPart(rest) || strings.HasPrefix(tool, "mcp__") {
		return ""
	}
	if _, known := toolKinds.lookup(tool); known {
		return ""
	}
	return "mcp__" + tool
}

// safeMCPPart reports whether s is a part of an OpenClaw MCP tool name.
func safeMCPPart(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// CanonicalTool is the Claude Code tool whose policies apply to a kind:
// a registry entry or rule written for Bash applies to every runtime's
// shell, one for Write to every whole-file write, and so on. "" for the
// kinds that have none (patch, mcp, other).
func CanonicalTool(k ToolKind) string {
	switch k {
	case KindShell:
		return "Bash"
	case KindFileWrite:
		return "Write"
	case KindFileEdit:
		return "Edit"
	case KindRead:
		return "Read"
	case KindSearch:
		return "Grep"
	case KindFetch:
		return "WebFetch"
	}
	return ""
}

// RecordedKind is the kind of a tool call docket-ledger recorded: the
// tool_kind of its entry body, else (entries written before it recorded
// one) the kind its tool name maps to.
func RecordedKind(tool string, body []byte) ToolKind {
	if k := gjson.GetBytes(body, "tool_kind"); k.Type == gjson.String && k.Str != "" {
		return ToolKind(k.Str)
	}
	return KindOf(tool)
}

// RecordedMCPName is the MCP name (Event.MCPName) of a tool call
// docket-ledger recorded: the mcp_name of its entry body, else the tool's
// own name when it has the mcp__<server>__<tool> form; "" for a call that
// is not an MCP server's.
func RecordedMCPName(tool string, body []byte) string {
	if m := gjson.GetBytes(body, "mcp_name"); m.Type == gjson.String && strings.HasPrefix(m.Str, "mcp__") {
		return m.Str
	}
	if strings.HasPrefix(tool, "mcp__") {
		return tool
	}
	return ""
}

// Kind is the event's ToolKind: the one its decoder set, else the one
// its tool name maps to; "" for an event that is not about a tool.
func (e *Event) Kind() ToolKind {
	if e.ToolKind != "" {
		return e.ToolKind
	}
	if e.ToolName == "" {
		return ""
	}
	return KindOf(e.ToolName)
}

// ShellCommand returns the command line of a shell call, whatever the
// runtime named the tool and its input field: "command" as a string
// (Claude Code, Codex Bash, Gemini CLI, Cursor), "command" as an argv
// (Codex shell, local_shell: a `bash -lc <script>` argv yields the
// script, any other argv its words joined by spaces), "cmd" (Codex
// exec_command), or the text OpenClaw's process tool types into a
// running session. ok is false for a call that is not a shell call or
// whose command cannot be read.
func (e *Event) ShellCommand() (cmd string, ok bool) {
	if e.Kind() != KindShell {
		return "", false
	}
	return ShellCommandOf(e.ToolInput)
}

// ShellCommandOf reads a shell command from a tool input, as
// Event.ShellCommand does.
func ShellCommandOf(input json.RawMessage) (string, bool) {
	in := gjson.ParseBytes(input)
	if !in.IsObject() {
		return "", false
	}
	for _, f := range []string{"command", "cmd"} {
		v := in.Get(f)
		switch {
		case v.Type == gjson.String:
			return v.String(), true
		case v.IsArray():
			var argv []string
			for _, a := range v.Array() {
				if a.Type != gjson.String {
					return "", false
				}
				argv = append(argv, a.String())
			}
			if len(argv) == 0 {
				return "", false
			}
			if len(argv) == 3 && isShell(argv[0]) && (argv[1] == "-c" || argv[1] == "-lc") {
				return argv[2], true
			}
			return strings.Join(argv, " "), true
		}
	}
	return typedInput(in)
}

// typedInput is what OpenClaw's process tool types into a running
// session (action write, paste or send-keys: data, text, literal, keys,
// hex), read as the line a shell there would run: the session is
// whatever the agent started, a shell as likely as not.
func typedInput(in gjson.Result) (string, bool) {
	switch in.Get("action").Str {
	case "write", "paste", "send-keys", "submit":
	default:
		return "", false
	}
	if !in.Get("sessionId").Exists() {
		return "", false
	}
	var b strings.Builder
	for _, f := range []string{"data", "text", "literal"} {
		if v := in.Get(f); v.Type == gjson.String {
			b.WriteString(v.Str)
		}
	}
	for _, k := range in.Get("keys").Array() {
		switch k := k.Str; k {
		case "Enter", "C-m", "KPEnter":
			b.WriteByte('\n')
		case "Space":
			b.WriteByte(' ')
		case "Tab":
			b.WriteByte('\t')
		default:
			if utf8.RuneCountInString(k) == 1 {
				b.WriteString(k)
			}
		}
	}
	for _, h := range in.Get("hex").Array() {
		if x, err := hex.DecodeString(strings.TrimPrefix(h.Str, "0x")); err == nil {
			b.Write(x)
		}
	}
	return b.String(), b.Len() > 0
}

func isShell(p string) bool {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	switch p {
	case "sh", "bash", "zsh", "dash", "ksh":
		return true
	}
	return false
}

// PatchText returns the patch of a patch call: Codex's apply_patch sends
// it as tool_input.command (a string), other shapes as "input" or
// "patch".
func PatchText(input json.RawMessage) (string, bool) {
	in := gjson.ParseBytes(input)
	for _, f := range []string{"command", "input", "patch"} {
		if v := in.Get(f); v.Type == gjson.String {
			return v.String(), true
		}
	}
	return "", false
}

// PatchPaths returns the paths a Codex-style patch names, in order and
// without repeats: every `*** Add File:`, `*** Update File:`, `*** Delete
// File:` and `*** Move to:` line.
func PatchPaths(patch string) []string {
	var out []string
	seen := map[string]bool{}
	for line := range strings.SplitSeq(patch, "\n") {
		line = strings.TrimRight(strings.TrimLeft(line, " \t"), " \t\r")
		for _, pre := range []string{"*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:"} {
			if rest, ok := strings.CutPrefix(line, pre); ok {
				if p := strings.TrimSpace(rest); p != "" && !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
				break
			}
		}
	}
	return out
}

// pathFields are the input fields that name a file or directory, across
// the runtimes' file tools.
var pathFields = []string{"file_path", "notebook_path", "absolute_path", "path", "dir_path", "directory"}

// Paths returns the file paths a tool call names, as written (relative
// paths stay relative to the event's Cwd): the path fields of file, read
// and search tools (file_path, notebook_path, absolute_path, path,
// dir_path, directory, and read_many_files' paths), and for a patch every
// file it adds, updates, deletes or moves to. Shell commands are not
// parsed here: the judge's classifier reads them.
func (e *Event) Paths() []string {
	k := e.Kind()
	if k == KindPatch {
		if p, ok := PatchText(e.ToolInput); ok {
			return PatchPaths(p)
		}
		return nil
	}
	if k == KindShell || k == "" {
		return nil
	}
	in := gjson.ParseBytes(e.ToolInput)
	if !in.IsObject() {
		return nil
	}
	var out []string
	for _, f := range pathFields {
		if v := in.Get(f); v.Type == gjson.String && v.String() != "" {
			out = append(out, v.String())
		}
	}
	if v := in.Get("paths"); v.IsArray() {
		for _, p := range v.Array() {
			if p.Type == gjson.String && p.String() != "" {
				out = append(out, p.String())
			}
		}
	}
	return out
}
