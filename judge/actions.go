package judge

import (
	"encoding/json"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
	"unicode"

	"github.com/docket/docket/policies"
)

// Act is an act the judge recognises in a call beyond its risk class
// (policies.ActionKinds): tools.yaml rules name it with `action:`.
type Act struct {
	Kind   string // policies.Action*
	Reason string // what the call does, for the decision's reason
}

// addAction appends kind to acts once.
func addAction(acts []Act, kind, reason string) []Act {
	for _, a := range acts {
		if a.Kind == kind {
			return acts
		}
	}
	return append(acts, Act{Kind: kind, Reason: reason})
}

// Verbs and nouns of MCP tool names. A tool name is split into words (at
// _, -, ., and lower-to-upper case changes); the verb is its first word
// found in one of the verb lists, after words that repeat the server's
// name (slack_post_message on the slack server).
var (
	mcpReadVerbs = words{"get", "list", "search", "find", "read", "fetch", "query", "view", "show", "describe", "lookup",
		"count", "check", "analyze", "analyse", "resolve", "inspect", "browse", "explore", "retrieve", "download", "summarize",
		"validate", "verify", "preview", "diff", "compare", "status", "whoami", "ping", "health", "load", "open", "select", "watch"}
	mcpMessageVerbs = words{"send", "post", "reply", "comment", "message", "email", "mail", "notify", "dm", "broadcast",
		"announce", "tweet", "sms", "forward", "mention", "react", "publish"}
	mcpPaymentVerbs = words{"charge", "pay", "refund", "transfer", "purchase", "buy", "checkout", "payout", "withdraw", "donate"}
	mcpAccessVerbs  = words{"grant", "revoke", "invite", "share", "unshare"}
	mcpApproveVerbs = words{"approve"}
	mcpWriteVerbs   = words{"create", "update", "add", "set", "edit", "upsert", "insert", "patch", "put", "write", "modify",
		"save", "assign", "unassign", "move", "archive", "unarchive", "close", "reopen", "complete", "mark", "change", "rename",
		"import", "upload", "submit", "replace", "append", "remove", "delete", "cancel", "schedule", "book", "link", "unlink",
		"attach", "detach", "merge", "restore", "transition"}
	mcpMessageNouns = words{"comment", "comments", "message", "messages", "reply", "replies", "email", "emails", "mail",
		"review", "reviews", "reaction", "reactions", "dm", "notification", "notifications", "sms", "tweet", "post"}
	// on a code host a note is a comment (GitLab's merge request notes)
	codeHostMessageNouns = words{"note", "notes", "discussion", "discussions"}
	mcpMoneyNouns        = words{"charge", "charges", "payment", "payments", "refund", "refunds", "transfer", "transfers", "payout",
		"payouts", "purchase", "purchases", "checkout", "withdrawal", "withdrawals", "donation", "donations"}
	mcpAccessNouns = words{"collaborator", "collaborators", "permission", "permissions", "member", "members", "membership",
		"memberships", "role", "roles", "access", "admin", "admins", "owner", "owners", "acl", "acls", "sharing", "invitation",
		"invitations", "invite", "invites", "grant", "grants"}
	// code hosts: creating or updating their objects (branches, files,
	// issues, pull requests) is development work, not a record write
	codeHosts = []string{"github", "gh", "gitlab", "glab", "bitbucket", "gitea", "forgejo", "codeberg", "sourcehut", "azure-devops", "azuredevops"}
)

// splitWords splits an identifier into lower-case words at non-letters,
// non-digits and lower-to-upper case changes.
func splitWords(s string) []string {
	var out []string
	var cur []rune
	var prev rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)) {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// mcpParts splits an MCP tool name into its server and its tool words:
// mcp__<server>__<tool>, where the server may itself hold "__" (the
// tool is the part after the last one).
func mcpParts(name string) (server string, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndex(rest, "__")
	if i <= 0 {
		return "", "", false
	}
	return rest[:i], rest[i+2:], true
}

// MCPActions recognises, from an MCP tool's name and input, the acts it
// performs: messages, payments, access changes, review approvals, and
// record writes to systems that are not code hosts. A tool whose verb
// reads (get, list, search, …) does none of them.
func MCPActions(name string, input json.RawMessage) []Act {
	server, tool, ok := mcpParts(name)
	if !ok {
		return nil
	}
	sw := splitWords(server)
	ws := splitWords(tool)
	// drop leading words that repeat the server's name
	for len(ws) > 1 && slicesContains(sw, ws[0]) {
		ws = ws[1:]
	}
	verb := ""
	for _, w := range ws {
		if mcpReadVerbs.has(w) || mcpMessageVerbs.has(w) || mcpPaymentVerbs.has(w) || mcpAccessVerbs.has(w) || mcpApproveVerbs.has(w) || mcpWriteVerbs.has(w) {
			verb = w
			break
		}
	}
	if verb == "" || mcpReadVerbs.has(verb) {
		return nil
	}
	has := func(set words) bool {
		for _, w := range ws {
			if set.has(w) {
				return true
			}
		}
		return false
	}
	what := name
	var acts []Act
	if mcpApproveVerbs.has(verb) || (has(words{"review", "reviews", "approval", "approvals"}) && inputApproves(input)) {
		acts = addAction(acts, policies.ActionApprove, what+" approves a review")
	}
	if mcpPaymentVerbs.has(verb) || has(mcpMoneyNouns) {
		acts = addAction(acts, policies.ActionPayment, what+" moves money")
	}
	if mcpAccessVerbs.has(verb) || has(mcpAccessNouns) {
		acts = addAction(acts, policies.ActionAccess, what+" changes someone's access")
	}
	if has(words{"draft", "drafts"}) {
		// a draft is not sent: the safe way to prepare a message
		return acts
	}
	if mcpMessageVerbs.has(verb) || (has(mcpMessageNouns) || codeHost(sw) && has(codeHostMessageNouns)) && len(acts) == 0 {
		acts = addAction(acts, policies.ActionMessage, what+" sends a message people read")
	}
	if mcpWriteVerbs.has(verb) && !codeHost(sw) {
		acts = addAction(acts, policies.ActionRecord, what+" writes to "+server+", an external system of record")
	}
	return acts
}

func codeHost(serverWords []string) bool {
	for _, w := range serverWords {
		for _, h := range codeHosts {
			if w == h || strings.ReplaceAll(h, "-", "") == w {
				return true
			}
		}
	}
	return false
}

// inputApproves reports whether a review tool's input approves: an
// event, state, action or decision field whose value is APPROVE(D).
func inputApproves(input json.RawMessage) bool {
	var in map[string]any
	if json.Unmarshal(input, &in) != nil {
		return false
	}
	for k, v := range in {
		s, ok := v.(string)
		if !ok {
			continue
		}
		k = strings.ToLower(k)
		if strings.Contains(k, "event") || strings.Contains(k, "state") || strings.Contains(k, "action") || strings.Contains(k, "decision") || strings.Contains(k, "verdict") {
			switch strings.ToUpper(strings.TrimSpace(s)) {
			case "APPROVE", "APPROVED", "APPROVAL":
				return true
			}
		}
	}
	return false
}

// --- shell ----------------------------------------------------------------

// ghActions recognises the acts of a gh command: comments and reviews
// (messages, approvals), and gh api calls that comment, review or change
// access. sub and rest are from subcommand(argv, -R/--repo).
func ghActions(c *CommandClass, sub string, rest []string) {
	verb, vargs := ghVerb(rest)
	switch {
	case (sub == "pr" || sub == "issue") && verb == "comment":
		c.act(policies.ActionMessage, "gh "+sub+" comment posts a message people read")
	case sub == "pr" && verb == "review":
		approve, message := ghReviewFlags(vargs)
		if approve {
			c.act(policies.ActionApprove, "gh pr review --approve approves a pull request")
		}
		if message || !approve {
			c.act(policies.ActionMessage, "gh pr review posts a review people read")
		}
	case sub == "repo" && verb == "deploy-key" && len(vargs) > 0 && vargs[0] == "add":
		c.act(policies.ActionAccess, "gh repo deploy-key add grants a key access to the repository")
	case sub == "api":
		ghAPIActions(c, rest)
	}
}

// ghVerb returns the first word after the subcommand that is not a flag
// (skipping the value of -R/--repo), and the words after it.
func ghVerb(rest []string) (string, []string) {
	for i := 1; i < len(rest); i++ {
		a := rest[i]
		if strings.HasPrefix(a, "-") {
			if a == "-R" || a == "--repo" {
				i++
			}
			continue
		}
		return a, rest[i+1:]
	}
	return "", nil
}

// ghReviewFlags reads gh pr review's flags: --approve/-a approves;
// --comment/-c, --request-changes/-r or a body posts a message.
func ghReviewFlags(args []string) (approve, message bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return
		case a == "--approve" || strings.HasPrefix(a, "--approve="):
			approve = approve || !strings.HasSuffix(a, "=false")
		case a == "--comment" || a == "--request-changes" || strings.HasPrefix(a, "--body"):
			message = true
			if a == "--body" || a == "--body-file" {
				i++
			}
		case a == "-R" || a == "--repo":
			i++
		case len(a) > 1 && a[0] == '-' && a[1] != '-':
			// a cluster of short flags; b and F take a value
			for j := 1; j < len(a); j++ {
				switch a[j] {
				case 'a':
					approve = true
				case 'c', 'r':
					message = true
				case 'b', 'F':
					message = true
					if j == len(a)-1 {
						i++
					}
					j = len(a)
				case 'R':
					if j == len(a)-1 {
						i++
					}
					j = len(a)
				}
			}
		}
	}
	return
}

// gh api flags that take a value.
var ghAPIValueFlags = words{"-X", "--method", "-H", "--header", "-f", "--raw-field", "-F", "--field", "--input", "-q", "--jq",
	"-t", "--template", "--hostname", "-p", "--preview", "--cache"}

// accessSegments are REST path segments whose writes change who may do
// what: collaborators, members, teams, invitations, permissions, keys,
// branch protection.
var accessSegments = words{"collaborators", "outside_collaborators", "members", "memberships", "invitations", "permissions",
	"permission", "keys", "protection", "restrictions", "teams", "admins", "access"}

func ghAPIActions(c *CommandClass, rest []string) {
	method, endpoint := "", ""
	var fields []string
	for i := 1; i < len(rest); i++ {
		a := rest[i]
		name, val, inline := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "--") || !inline {
			name, val = a, ""
		}
		if strings.HasPrefix(a, "-") && len(a) > 2 && a[1] != '-' {
			// -XPUT, -fevent=APPROVE
			if v := a[2:]; ghAPIValueFlags.has(a[:2]) {
				name, val, inline = a[:2], v, true
			}
		}
		if strings.HasPrefix(a, "-") && ghAPIValueFlags.has(name) {
			if !inline && i+1 < len(rest) {
				i++
				val = rest[i]
			}
			switch name {
			case "-X", "--method":
				method = strings.ToUpper(val)
			case "-f", "--raw-field", "-F", "--field":
				fields = append(fields, val)
			case "--input":
				fields = append(fields, "@"+val)
			}
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		if endpoint == "" {
			endpoint = a
		}
	}
	if method == "" {
		method = "GET"
		if len(fields) > 0 {
			method = "POST"
		}
	}
	if method == "GET" || method == "HEAD" {
		return
	}
	if endpoint == "graphql" {
		q := strings.Join(fields, "\n")
		if !strings.Contains(strings.ToLower(q), "mutation") {
			return
		}
		lq := strings.ToLower(q)
		switch {
		case strings.Contains(lq, "review") && strings.Contains(q, "APPROVE"):
			c.act(policies.ActionApprove, "gh api graphql approves a pull request")
		}
		if strings.Contains(lq, "comment") || strings.Contains(lq, "review") {
			c.act(policies.ActionMessage, "gh api graphql posts a comment")
		}
		for _, n := range []string{"collaborator", "permission", "member", "invitation", "deploykey"} {
			if strings.Contains(lq, n) {
				c.act(policies.ActionAccess, "gh api graphql changes access")
				break
			}
		}
		return
	}
	forgeAPIActions(c, "gh api "+method+" "+endpoint, method, endpoint, fields)
}

// forgeAPIActions recognises the acts of a write to a forge's REST API
// (GitHub's, GitLab's) by the endpoint's path segments: comments, notes
// and reviews are messages; a review whose body's event is APPROVE, or
// GitLab's …/approve, is an approval; collaborators, members, teams,
// invitations, permissions, keys and branch protection are access.
func forgeAPIActions(c *CommandClass, what, method, endpoint string, bodies []string) {
	if method == "GET" || method == "HEAD" {
		return
	}
	p := endpoint
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	approves := false
	for _, b := range bodies {
		u := strings.ToUpper(b)
		if k, v, ok := strings.Cut(u, "="); ok && strings.TrimSpace(k) == "EVENT" && strings.TrimSpace(v) == "APPROVE" ||
			strings.Contains(u, `"EVENT"`) && strings.Contains(u, `"APPROVE"`) {
			approves = true
		}
	}
	segs := strings.Split(strings.Trim(p, "/"), "/")
	for i, s := range segs {
		switch {
		case accessSegments.has(s):
			c.act(policies.ActionAccess, what+" changes access")
		case s == "comments" || s == "replies" || s == "notes" || s == "discussions":
			c.act(policies.ActionMessage, what+" posts a comment")
		case s == "approve" && i > 0:
			c.act(policies.ActionApprove, what+" approves a merge request")
		case s == "reviews" && i > 0 && segs[i-1] != "requested_reviewers":
			if approves {
				c.act(policies.ActionApprove, what+" approves a pull request")
			}
			c.act(policies.ActionMessage, what+" posts a review")
		}
	}
}

// glabActions: the GitLab CLI's notes (messages), approvals and API
// writes. sub and rest are from subcommand(argv, -R/--repo).
func glabActions(c *CommandClass, sub string, rest []string) {
	verb, _ := ghVerb(rest)
	switch {
	case (sub == "mr" || sub == "issue") && (verb == "note" || verb == "comment"):
		c.act(policies.ActionMessage, "glab "+sub+" "+verb+" posts a message people read")
	case sub == "mr" && verb == "approve":
		c.act(policies.ActionApprove, "glab mr approve approves a merge request")
	case sub == "api":
		ghAPIActions(c, rest)
	}
}

// forgeAPIHost: a URL of a forge's REST API (api.github.com, a GitHub
// Enterprise /api/v3, GitLab's /api/v4): its endpoint path, or "".
func forgeAPIEndpoint(pu *url.URL) string {
	switch {
	case pu.Host == "api.github.com":
		return pu.Path
	case strings.HasPrefix(pu.Path, "/api/v3/"):
		return strings.TrimPrefix(pu.Path, "/api/v3")
	case strings.HasPrefix(pu.Path, "/api/v4/"):
		return strings.TrimPrefix(pu.Path, "/api/v4")
	}
	return ""
}

// stripeReadVerbs are stripe CLI words that read or run locally.
var stripeReadVerbs = words{"list", "retrieve", "get", "listen", "logs", "login", "logout", "config", "version", "help",
	"status", "open", "samples", "completion", "fixtures", "trigger", "serve", "feedback", "resources", "search"}

// stripeActions: a stripe CLI call that creates, updates or acts on an
// object (stripe charges create, stripe refunds create, stripe post
// /v1/…) moves money or changes billing: a payment.
func stripeActions(c *CommandClass, argv []string) {
	var ws []string
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if strings.HasPrefix(a, "-") {
			if !strings.Contains(a, "=") && i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") && stripeValueFlag(a) {
				i++
			}
			continue
		}
		ws = append(ws, strings.ToLower(a))
	}
	// stripe <command> or stripe <resource> <operation>
	if len(ws) == 0 || stripeReadVerbs.has(ws[0]) || len(ws) > 1 && stripeReadVerbs.has(ws[1]) {
		return
	}
	c.raise(policies.ExternalSideEffect, "stripe "+strings.Join(ws[:min(len(ws), 2)], " ")+" changes payments")
	c.act(policies.ActionPayment, "stripe "+strings.Join(ws[:min(len(ws), 2)], " ")+" moves money or changes billing")
}

// stripeValueFlag: flags of stripe resource commands that take a value
// (-d key=value, --amount 500, …); boolean flags are few and known.
func stripeValueFlag(f string) bool {
	switch f {
	case "--live", "--confirm", "--help", "-h", "--show-headers", "-s", "--dark-style", "--expand-all":
		return false
	}
	return true
}

// Messaging and payment APIs a curl or wget may send a request to.
var (
	messageHosts = []string{"hooks.slack.com", "slack.com/api/chat.", "slack.com/api/conversations.invite", "discord.com/api/webhooks",
		"discordapp.com/api/webhooks", "api.telegram.org", "api.twilio.com", "api.sendgrid.com", "api.mailgun.net",
		"api.postmarkapp.com", "api.resend.com", "webhook.office.com", "api.pushover.net", "ntfy.sh", "api.mailchimp.com",
		"mandrillapp.com", "graph.microsoft.com/v1.0/me/sendmail"}
	paymentHosts = []string{"api.stripe.com", "api.paypal.com", "api-m.paypal.com", "api.sandbox.paypal.com", "connect.squareup.com",
		"api.squareup.com", "api.braintreegateway.com", "checkout.adyen.com", "api.wise.com", "api.coinbase.com"}
)

// requestActions: a request body (or a non-GET method) sent to a known
// messaging or payment API.
func requestActions(c *CommandClass, argv []string) {
	method := strings.ToUpper(flagValue(argv, "-X", "--request", "--method"))
	var bodies []string
	for i, a := range argv {
		switch a {
		case "-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--json", "-F", "--form", "--post-data", "--body-data":
			if i+1 < len(argv) {
				bodies = append(bodies, argv[i+1])
			}
		}
	}
	if method == "" {
		method = "POST"
		if hasFlag(argv, "-G", "--get") {
			method = "GET"
		}
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if strings.HasPrefix(a, "-") {
			if curlValueFlag(a) {
				i++
			}
			continue
		}
		u := strings.ToLower(a)
		if !strings.Contains(u, "://") {
			u = "https://" + u
		}
		pu, err := url.Parse(u)
		if err != nil || pu.Host == "" {
			continue
		}
		if ep := forgeAPIEndpoint(pu); ep != "" {
			forgeAPIActions(c, argv[0]+" "+method+" "+pu.Host+ep, method, ep, bodies)
		}
		hp := pu.Host + pu.EscapedPath()
		for _, h := range messageHosts {
			if hostMatch(hp, h) {
				c.act(policies.ActionMessage, argv[0]+" sends a message through "+pu.Host)
			}
		}
		for _, h := range paymentHosts {
			if hostMatch(hp, h) {
				c.act(policies.ActionPayment, argv[0]+" calls the payment API "+pu.Host)
			}
		}
	}
}

// curlValueFlag: curl and wget flags whose value is not a URL.
func curlValueFlag(f string) bool {
	switch f {
	case "-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--json", "-F", "--form", "-H", "--header",
		"-X", "--request", "--method", "-u", "--user", "-o", "--output", "-A", "--user-agent", "-e", "--referer", "-b", "--cookie",
		"-c", "--cookie-jar", "-T", "--upload-file", "--post-data", "--body-data", "--output-document":
		return true
	}
	return false
}

// hostMatch: hp (host and path) is pattern's host or a subdomain of it,
// with pattern's path as a prefix.
func hostMatch(hp, pattern string) bool {
	host, p, _ := strings.Cut(pattern, "/")
	h, rest, _ := strings.Cut(hp, "/")
	if h != host && !strings.HasSuffix(h, "."+host) {
		return false
	}
	return strings.HasPrefix(rest, p)
}

// privilegedContainer reports why a docker/podman run, create or exec
// hands the container the host: --privileged, the host's PID or user
// namespace, all or admin capabilities, or a bind mount of /, a system
// directory or the container engine's socket.
func privilegedContainer(argv []string) string {
	sub, rest := subcommand(argv, map[string]bool{"-H": true, "--host": true, "--context": true, "-c": true, "--config": true, "--log-level": true, "-l": true})
	if sub == "container" && len(rest) > 1 {
		sub, rest = rest[1], rest[1:]
	}
	if sub != "run" && sub != "create" && sub != "exec" {
		return ""
	}
	for i := 1; i < len(rest); i++ {
		a := rest[i]
		if !strings.HasPrefix(a, "-") {
			break // the image: what follows is the container's command
		}
		name, val, inline := strings.Cut(a, "=")
		next := func() string {
			if inline {
				return val
			}
			if i+1 < len(rest) {
				i++
				return rest[i]
			}
			return ""
		}
		switch name {
		case "--privileged":
			if !inline || val != "false" {
				return "a privileged container is root on the host"
			}
		case "--pid", "--userns", "--ipc", "--uts", "--cgroupns":
			if next() == "host" {
				return "a container in the host's " + strings.TrimPrefix(name, "--") + " namespace reaches the host"
			}
		case "--cap-add":
			if v := strings.ToUpper(next()); v == "ALL" || strings.Contains(v, "SYS_ADMIN") || strings.Contains(v, "SYS_PTRACE") || strings.Contains(v, "SYS_MODULE") {
				return "a container with " + v + " capabilities reaches the host"
			}
		case "--security-opt":
			if v := next(); strings.Contains(v, "unconfined") {
				return "a container without its security profile (" + v + ")"
			}
		case "-v", "--volume", "--mount":
			v := next()
			if src := mountSource(name, v); hostSensitive(src) {
				return "mounting the host's " + src + " into a container gives it the host"
			}
		default:
			if len(a) > 2 && a[1] != '-' && (a[:2] == "-v") {
				if src := mountSource("-v", a[2:]); hostSensitive(src) {
					return "mounting the host's " + src + " into a container gives it the host"
				}
			}
			if dockerValueFlag(name) && !inline {
				i++
			}
		}
	}
	return ""
}

// dockerValueFlag: run flags that take a value (so their value is not
// read as the image). Boolean flags are the known few.
func dockerValueFlag(f string) bool {
	switch f {
	case "-d", "--detach", "-i", "--interactive", "-t", "-it", "-ti", "--tty", "--rm", "--init", "-P", "--publish-all",
		"--read-only", "--no-healthcheck", "--oom-kill-disable", "--sig-proxy", "--help", "-q", "--quiet", "--disable-content-trust":
		return false
	}
	return strings.HasPrefix(f, "--") || len(f) == 2
}

func mountSource(flag, v string) string {
	if flag == "--mount" {
		for _, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(kv, "=")
			if k == "source" || k == "src" {
				return val
			}
		}
		return ""
	}
	src, _, _ := strings.Cut(v, ":")
	return src
}

func hostSensitive(src string) bool {
	if !strings.HasPrefix(src, "/") {
		return false
	}
	p := path.Clean(src)
	switch p {
	case "/", "/etc", "/root", "/boot", "/dev", "/proc", "/sys", "/usr", "/bin", "/sbin", "/lib", "/var", "/var/lib", "/home", "/run",
		"/var/run/docker.sock", "/run/docker.sock", "/run/podman/podman.sock", "/var/run/podman/podman.sock", "/run/containerd/containerd.sock":
		return true
	}
	return strings.HasSuffix(p, ".sock") && strings.Contains(p, "docker")
}

// --- secrets printed ----------------------------------------------------

// secretName matches an environment variable name or a filter pattern
// that names credentials. It compiles on first use, as secretRef does:
// most calls print nothing, and a hook must not pay for it at start-up.
var secretName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)token|secret|passw|passphrase|credential|api[_-]?key|apikey|access[_-]?key|private[_-]?key|auth|bearer|session|cookie|signing|(^|[^a-z])(key|pat|pwd)([^a-z]|$)`)
})

// secretRef matches $NAME and ${NAME…} references whose value is
// expanded ( ${#NAME} is a length, ${NAME:+x} the word x ).
var secretRef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)(\}|:[-=?]|$|[^A-Za-z0-9_:}])`)
})

// envDump reports a command that prints the whole environment: env or
// printenv without a command or name, set, export -p, declare -x, or a
// process's /proc/…/environ.
func envDump(raw []string) bool {
	if len(raw) == 0 {
		return false
	}
	switch path.Base(raw[0]) {
	case "env", "printenv":
		for _, w := range raw[1:] {
			if !strings.HasPrefix(w, "-") && !isAssignment(w) {
				return false // runs a command, or prints one name
			}
		}
		return true
	case "set":
		return len(raw) == 1
	case "export", "declare", "typeset":
		for _, w := range raw[1:] {
			if !strings.HasPrefix(w, "-") {
				return false
			}
		}
		return true
	case "cat", "strings", "xargs":
		for _, w := range raw[1:] {
			if strings.HasPrefix(w, "/proc/") && strings.HasSuffix(w, "/environ") {
				return true
			}
		}
	}
	return false
}

// secretPrinter reports a segment that prints secret-named values itself:
// printenv NAME, echo/printf $NAME.
func secretPrinter(raw []string) string {
	if len(raw) == 0 {
		return ""
	}
	switch path.Base(raw[0]) {
	case "printenv":
		for _, w := range raw[1:] {
			if !strings.HasPrefix(w, "-") && secretName().MatchString(w) {
				return "printenv " + w
			}
		}
	case "echo", "printf":
		for _, w := range raw[1:] {
			for _, m := range secretRef().FindAllStringSubmatch(w, -1) {
				if secretName().MatchString(m[1]) {
					return path.Base(raw[0]) + " $" + m[1]
				}
			}
		}
	}
	return ""
}

// passThrough commands copy (part of) their input to their output.
var passThrough = words{"grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "gawk", "sed", "cat", "head", "tail", "sort", "uniq",
	"tr", "cut", "tee", "less", "more", "column", "nl", "strings", "xargs", "findstr", "select-string", "base64", "xxd", "od", "hexdump", "rev", "fold"}

// revealsSecrets reports whether a pipeline prints secret-named values
// of the environment into the transcript: a dump of the environment
// filtered by a secret-like name (env | grep -i token), or printenv or
// echo of a secret-named variable, whose output reaches the terminal
// (not redirected to a file, not fed to a command that consumes it).
func revealsSecrets(pl [][]string) string {
	start, what, filtered := -1, "", false
	for i, raw := range pl {
		seg := strip(raw)
		if start < 0 {
			if envDump(rawCommand(raw)) {
				start, what = i, strings.Join(rawCommand(raw), " ")
				continue
			}
			if w := secretPrinter(rawCommand(raw)); w != "" {
				start, what, filtered = i, w, true
				if len(seg.Redirects) > 0 && !onlyStdio(seg.Redirects) {
					return ""
				}
				continue
			}
			continue
		}
		name := seg.Name()
		if !passThrough.has(name) {
			return "" // consumed: wc, a login, a file
		}
		if len(seg.Redirects) > 0 && !onlyStdio(seg.Redirects) {
			return ""
		}
		if (name == "grep" || name == "egrep" || name == "fgrep" || name == "rg") && hasFlag(seg.Argv, "-q", "--quiet", "-c", "--count", "-l", "--files-with-matches", "-L") {
			return ""
		}
		for _, a := range seg.Argv[1:] {
			if !strings.HasPrefix(a, "-") && secretName().MatchString(a) {
				filtered = true
				what += " | " + name + " " + a
				break
			}
			if strings.HasPrefix(a, "-e") && len(a) > 2 && secretName().MatchString(a[2:]) || strings.HasPrefix(a, "--regexp=") && secretName().MatchString(a) {
				filtered = true
				what += " | " + name + " " + a
				break
			}
		}
	}
	if start < 0 || !filtered {
		return ""
	}
	return what
}

// rawCommand drops leading assignments, redirections and command/exec
// wrappers from raw words, keeping env itself (strip removes it).
func rawCommand(raw []string) []string {
	var out []string
	for i := 0; i < len(raw); i++ {
		if isRedirOp(raw[i]) {
			i++
			continue
		}
		out = append(out, raw[i])
	}
	for len(out) > 0 && (isAssignment(out[0]) || out[0] == "command" || out[0] == "exec" || out[0] == "builtin" || out[0] == "sudo" || out[0] == "nohup") {
		out = out[1:]
	}
	return out
}

func onlyStdio(redirects []string) bool {
	for _, r := range redirects {
		if r != "/dev/stdout" && r != "/dev/stderr" && r != "/dev/tty" && !strings.HasPrefix(r, "&") {
			return false
		}
	}
	return true
}
