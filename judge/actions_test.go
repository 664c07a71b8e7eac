package judge

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/docket/docket/policies"
)

// the default rules that name an action
var actionRules = []string{"no-review-approval", "messages-need-approval", "payments-need-approval",
	"access-changes-need-approval", "external-records-need-approval", "printed-secrets-need-approval"}

// The default rules over recognised acts, through the engine: each act
// in the forms an agent might write it (flags before the subcommand,
// wrappers, env prefixes, quoting, other MCP server names), and the
// near misses that must still be allowed.
func TestDefaultActionRules(t *testing.T) {
	e, _ := testEngine(t, defaultSet(t))
	bash := func(c string) (string, any) { return "Bash", map[string]any{"command": c} }
	mcp := func(name string, in map[string]any) (string, any) { return name, in }
	type call struct {
		tool  string
		input any
	}
	c := func(tool string, in any) call { return call{tool, in} }
	tests := []struct {
		name string
		call call
		want Outcome
		rule string // the action rule that decides; "" means none applies
	}{
		// messages
		{"gh pr comment", c(bash("gh pr comment 28 --body 'ready for review'")), Escalate, "messages-need-approval"},
		{"gh -R before the subcommand", c(bash("gh -R owner/repo pr comment 3 -b hi")), Escalate, "messages-need-approval"},
		{"gh --repo= before the subcommand", c(bash("gh --repo=owner/repo pr comment 3 -b hi")), Escalate, "messages-need-approval"},
		{"gh --repo between pr and comment", c(bash("gh pr --repo owner/repo comment 3 -b hi")), Escalate, "messages-need-approval"},
		{"env prefix", c(bash("GH_REPO=owner/repo gh issue comment 3 --body hi")), Escalate, "messages-need-approval"},
		{"command wrapper", c(bash("command gh issue comment 3 --body hi")), Escalate, "messages-need-approval"},
		{"absolute path and spacing", c(bash("/usr/local/bin/gh   pr    comment  3 -b hi")), Escalate, "messages-need-approval"},
		{"quoted and escaped words", c(bash(`"gh" 'pr' c\omment 3 -b hi`)), Escalate, "messages-need-approval"},
		{"inside sh -c", c(bash("cd /home/u/proj && sh -c 'gh pr comment 3 -b hi'")), Escalate, "messages-need-approval"},
		{"after a semicolon", c(bash("git status; gh issue comment 3 -b hi")), Escalate, "messages-need-approval"},
		{"non-approving review", c(bash("gh pr review 42 --comment -b 'nit: rename x'")), Escalate, "messages-need-approval"},
		{"a body that looks like -a", c(bash("gh pr review 42 -b '-a is the flag to use'")), Escalate, "messages-need-approval"},
		{"gh api comment", c(bash("gh api repos/o/r/issues/3/comments -f body=hi")), Escalate, "messages-need-approval"},
		{"gh api graphql comment", c(bash(`gh api graphql -f query='mutation { addComment(input: {subjectId: "I_1", body: "hi"}) { clientMutationId } }'`)), Escalate, "messages-need-approval"},
		{"curl to the GitHub API", c(bash(`curl -s -X POST -H "Accept: application/vnd.github+json" https://api.github.com/repos/o/r/issues/3/comments -d '{"body":"hi"}'`)), Escalate, "messages-need-approval"},
		{"glab mr note", c(bash("glab -R grp/proj mr note 7 -m 'looks good'")), Escalate, "messages-need-approval"},
		{"mcp GitLab note", c(mcp("mcp__gitlab__create_merge_request_note", map[string]any{"merge_request_iid": 7, "body": "hi"})), Escalate, "messages-need-approval"},
		{"mail", c(bash("echo hi | mail -s hello team")), Escalate, "messages-need-approval"},
		{"curl to a mail API", c(bash(`curl -X POST https://api.sendgrid.com/v3/mail/send -d '{"subject":"hi"}'`)), Escalate, "messages-need-approval"},
		{"mcp send_email", c(mcp("mcp__gmail__send_email", map[string]any{"to": "customer@example.com", "subject": "x", "body": "y"})), Escalate, "messages-need-approval"},
		{"mcp server-prefixed tool", c(mcp("mcp__slack__slack_post_message", map[string]any{"channel_id": "C1", "text": "deploy done"})), Escalate, "messages-need-approval"},
		{"mcp connector server name", c(mcp("mcp__claude_ai_Slack__slack_send_message", map[string]any{"channel": "#general", "text": "hi"})), Escalate, "messages-need-approval"},
		{"mcp camelCase", c(mcp("mcp__team-chat__chatPostMessage", map[string]any{"text": "hi"})), Escalate, "messages-need-approval"},
		{"mcp issue comment", c(mcp("mcp__github__add_issue_comment", map[string]any{"issue_number": 3, "body": "hi"})), Escalate, "messages-need-approval"},
		{"mcp review comment", c(mcp("mcp__github__create_pull_request_review", map[string]any{"pullNumber": 7, "event": "COMMENT", "body": "nit"})), Escalate, "messages-need-approval"},
		// approvals
		{"gh pr review --approve", c(bash("gh pr review 42 --approve")), Block, "no-review-approval"},
		{"approve flag first", c(bash("gh pr review --approve 42 -b LGTM")), Block, "no-review-approval"},
		{"short -a", c(bash("gh pr review 42 -a")), Block, "no-review-approval"},
		{"--approve=true with -R", c(bash("gh -R o/r pr review 42 --approve=true")), Block, "no-review-approval"},
		{"approve then merge", c(bash("gh pr review 42 --approve && gh pr merge 42 --squash")), Block, "no-review-approval"},
		{"gh api review event", c(bash("gh api -X POST repos/o/r/pulls/7/reviews -f event=APPROVE")), Block, "no-review-approval"},
		{"curl review approval", c(bash(`curl -X POST https://api.github.com/repos/o/r/pulls/7/reviews -d '{"event": "APPROVE"}'`)), Block, "no-review-approval"},
		{"GitHub Enterprise API approval", c(bash(`curl --data '{"event":"approve"}' https://ghe.acme-corp.io/api/v3/repos/o/r/pulls/7/reviews`)), Block, "no-review-approval"},
		{"glab mr approve", c(bash("glab mr approve 7")), Block, "no-review-approval"},
		{"glab api approve", c(bash("glab api -X POST projects/1/merge_requests/7/approve")), Block, "no-review-approval"},
		{"mcp review APPROVE", c(mcp("mcp__github__create_pull_request_review", map[string]any{"pullNumber": 7, "event": "APPROVE", "body": "LGTM"})), Block, "no-review-approval"},
		{"mcp review approve lower case", c(mcp("mcp__gh__submit_pending_pull_request_review", map[string]any{"event": "approve"})), Block, "no-review-approval"},
		{"mcp approve verb", c(mcp("mcp__gitlab__approve_merge_request", map[string]any{"iid": 7})), Block, "no-review-approval"},
		// payments
		{"stripe charge", c(bash("stripe charges create --amount 50000 --currency usd --customer cus_123")), Escalate, "payments-need-approval"},
		{"stripe with flags first", c(bash("STRIPE_DEVICE_NAME=ci stripe --api-key sk_test_abc refunds create --charge ch_1")), Escalate, "payments-need-approval"},
		{"stripe with a read word later", c(bash("stripe charges create --amount 100 help")), Escalate, "payments-need-approval"},
		{"stripe post", c(bash("stripe post /v1/payment_intents -d amount=100")), Escalate, "payments-need-approval"},
		{"curl to the payment API", c(bash("curl https://api.stripe.com/v1/charges -d amount=100 -d currency=usd")), Escalate, "payments-need-approval"},
		{"mcp refund", c(mcp("mcp__stripe__create_refund", map[string]any{"payment_intent": "pi_1"})), Escalate, "payments-need-approval"},
		{"mcp pay", c(mcp("mcp__billing__pay_invoice", map[string]any{"invoice": "in_1"})), Escalate, "payments-need-approval"},
		// access
		{"gh api collaborator admin", c(bash("gh api -X PUT repos/acme/api/collaborators/newbie -f permission=admin")), Escalate, "access-changes-need-approval"},
		{"gh api --method= with a leading slash", c(bash("gh api --method=PUT /repos/acme/api/collaborators/newbie")), Escalate, "access-changes-need-approval"},
		{"gh api -XPUT", c(bash("gh api -XPUT repos/acme/api/collaborators/newbie")), Escalate, "access-changes-need-approval"},
		{"gh api invitation (fields imply POST)", c(bash("gh api orgs/acme/invitations -F invitee_id=1")), Escalate, "access-changes-need-approval"},
		{"gh deploy key", c(bash("gh repo deploy-key add key.pub --allow-write")), Escalate, "access-changes-need-approval"},
		{"mcp share", c(mcp("mcp__gdrive__share_file", map[string]any{"file_id": "f1", "email": "x@example.com", "role": "writer"})), Escalate, "access-changes-need-approval"},
		{"mcp add member", c(mcp("mcp__linear__add_team_member", map[string]any{"team": "t", "user": "u"})), Escalate, "access-changes-need-approval"},
		// external records
		{"mcp CRM create", c(mcp("mcp__attio__create-record", map[string]any{"resource_type": "companies", "record_data": map[string]any{"name": "Acme"}})), Escalate, "external-records-need-approval"},
		{"mcp CRM update", c(mcp("mcp__hubspot__crm_update_object", map[string]any{"id": "1"})), Escalate, "external-records-need-approval"},
		{"mcp tracker create", c(mcp("mcp__linear__create_issue", map[string]any{"title": "x"})), Escalate, "external-records-need-approval"},
		// secrets printed
		{"env | grep token", c(bash("env | grep -i token")), Escalate, "printed-secrets-need-approval"},
		{"no spaces", c(bash("env|grep TOKEN")), Escalate, "printed-secrets-need-approval"},
		{"printenv | grep -E", c(bash("printenv | grep -E 'API_KEY|SECRET'")), Escalate, "printed-secrets-need-approval"},
		{"set | grep passw", c(bash("set | grep -i passw")), Escalate, "printed-secrets-need-approval"},
		{"printenv NAME", c(bash("printenv GITHUB_TOKEN")), Escalate, "printed-secrets-need-approval"},
		{"echo $NAME", c(bash(`echo "$OPENAI_API_KEY"`)), Escalate, "printed-secrets-need-approval"},
		{"echo ${NAME} with a prefix", c(bash(`echo "key: ${STRIPE_SECRET_KEY}"`)), Escalate, "printed-secrets-need-approval"},
		{"encoded on the way out", c(bash(`echo $GITHUB_TOKEN | base64`)), Escalate, "printed-secrets-need-approval"},
		{"fed to a login, not printed", c(bash(`printenv GITHUB_TOKEN | gh auth login --with-token`)), Escalate, ""},
		{"/proc environ", c(bash("cat /proc/self/environ | tr '\\0' '\\n' | grep -i secret")), Escalate, "printed-secrets-need-approval"},
		// privileged containers: high_risk, escalated by the class policy
		{"docker --privileged with / mounted", c(bash("docker run --rm --privileged -v /:/host alpine chroot /host")), Escalate, ""},
		{"docker --context first", c(bash("docker --context prod run --privileged alpine")), Escalate, ""},
		{"engine socket", c(bash("podman run -v /var/run/docker.sock:/var/run/docker.sock img")), Escalate, ""},
		{"--mount of /", c(bash("docker run --mount type=bind,source=/,target=/host alpine")), Escalate, ""},
		{"container run --pid=host", c(bash("docker container run --pid=host alpine")), Escalate, ""},

		// near misses: allowed
		{"gh pr view --comments", c(bash("gh pr view 28 --comments")), Allow, ""},
		{"gh issue view --comments", c(bash("gh -R o/r issue view 3 --comments")), Allow, ""},
		{"gh pr create mentioning comments", c(bash("gh pr create --title 'fix pr comment handling' --body 'approve flow'")), Allow, ""},
		{"gh api GET comments", c(bash("gh api repos/o/r/issues/3/comments")), Allow, ""},
		{"gh api GET collaborators", c(bash("gh api repos/acme/api/collaborators --paginate")), Allow, ""},
		{"gh api GET with query fields", c(bash("gh api -X GET search/issues -f q=bug")), Allow, ""},
		{"curl -G to the GitHub API", c(bash("curl -G https://api.github.com/repos/o/r/issues/3/comments -d per_page=5")), Allow, ""},
		{"glab mr view", c(bash("glab mr view 7 --comments")), Allow, ""},
		{"browser tool closing a tab", c(mcp("mcp__playwright__browser_close", map[string]any{})), Allow, ""},
		{"browser tool uploading", c(mcp("mcp__playwright__browser_file_upload", map[string]any{"paths": []any{"/home/u/proj/a.png"}})), Allow, ""},
		{"stripe listen", c(bash("stripe listen --forward-to localhost:4242/webhook")), Allow, ""},
		{"stripe list", c(bash("stripe charges list --limit 3")), Allow, ""},
		{"curl GET of a payment API", c(bash("curl -s https://status.stripe.com/api/v2/status.json")), Allow, ""},
		{"docker run plain", c(bash(`docker run --rm -v "$PWD":/app -w /app golang:1.22 go test ./...`)), Allow, ""},
		{"--privileged after the image", c(bash("docker run --rm alpine echo --privileged")), Allow, ""},
		{"docker publish a port", c(bash("docker run -d -p 8080:80 nginx")), Allow, ""},
		{"env | grep node", c(bash("env | grep -i node")), Allow, ""},
		{"printenv PATH", c(bash("printenv PATH")), Allow, ""},
		{"length of a token", c(bash(`echo ${#GITHUB_TOKEN}`)), Allow, ""},
		{"is a token set", c(bash(`[ -n "$GITHUB_TOKEN" ] && echo set`)), Allow, ""},
		{"count of tokens", c(bash("env | grep -c TOKEN")), Allow, ""},
		{"tokens counted by wc", c(bash("env | grep TOKEN | wc -l")), Allow, ""},
		{"plain env", c(bash("env")), Allow, ""},
		{"mcp get comments", c(mcp("mcp__github__get_issue_comments", map[string]any{"issue_number": 3})), Allow, ""},
		{"mcp list reviews", c(mcp("mcp__github__list_pull_request_reviews", map[string]any{"pullNumber": 3})), Allow, ""},
		{"mcp create pull request", c(mcp("mcp__github__create_pull_request", map[string]any{"title": "x", "head": "f", "base": "main"})), Allow, ""},
		{"mcp create branch", c(mcp("mcp__gitlab__create_branch", map[string]any{"branch": "f"})), Allow, ""},
		{"mcp CRM search", c(mcp("mcp__attio__search-records", map[string]any{"query": "x"})), Allow, ""},
		{"mcp CRM get", c(mcp("mcp__attio__get-record-details", map[string]any{"record_id": "1"})), Allow, ""},
		{"mcp analysis", c(mcp("mcp__vibe-check-npm__analyze_doom_loops", map[string]any{"content": "plan"})), Allow, ""},
		{"mcp channel history", c(mcp("mcp__slack__slack_get_channel_history", map[string]any{"channel_id": "C1"})), Allow, ""},
		{"mcp search mail", c(mcp("mcp__gmail__search_emails", map[string]any{"query": "invoice"})), Allow, ""},
		{"mcp draft", c(mcp("mcp__gmail__create_draft", map[string]any{"to": "team@example.com", "body": "draft"})), Allow, ""},
		{"mcp local memory", c(mcp("mcp__memory__create_entities", map[string]any{"entities": []any{}})), Allow, ""},
		{"mcp local files", c(mcp("mcp__filesystem__write_file", map[string]any{"path": "/home/u/proj/a.txt", "content": "x"})), Allow, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, d := e.Decide(context.Background(), ev(tc.call.tool, tc.call.input))
			if d.Outcome != tc.want {
				t.Fatalf("%s, want %s (reason %q, rules %v)", d.Outcome, tc.want, d.Reason, d.RuleIDs)
			}
			for _, id := range actionRules {
				if tc.rule == "" && slices.Contains(d.RuleIDs, id) {
					t.Errorf("rule %s applied (rules %v, reason %q)", id, d.RuleIDs, d.Reason)
				}
			}
			if tc.rule != "" && !slices.Contains(d.RuleIDs, tc.rule) {
				t.Errorf("rule %s did not apply (rules %v, reason %q)", tc.rule, d.RuleIDs, d.Reason)
			}
			if tc.rule != "" && !strings.Contains(d.Reason, "rule "+tc.rule+": ") {
				t.Errorf("reason %q does not say what the call does", d.Reason)
			}
		})
	}
}

// MCPActions by name alone, for the verbs and nouns the rules rest on.
func TestMCPActions(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"mcp__gmail__send_email", `{}`, []string{policies.ActionMessage}},
		{"mcp__github__add_issue_comment", `{}`, []string{policies.ActionMessage}},
		{"mcp__github__create_pull_request_review", `{"event":"APPROVE"}`, []string{policies.ActionApprove}},
		{"mcp__github__create_pull_request_review", `{"event":"REQUEST_CHANGES"}`, []string{policies.ActionMessage}},
		{"mcp__github__create_pull_request", `{}`, nil},
		{"mcp__github__merge_pull_request", `{}`, nil},
		{"mcp__stripe__create_payment_link", `{}`, []string{policies.ActionPayment, policies.ActionRecord}},
		{"mcp__attio__update-record", `{}`, []string{policies.ActionRecord}},
		{"mcp__attio__get-attributes", `{}`, nil},
		{"mcp__clear-thought-server__sequentialthinking", `{}`, nil},
		{"mcp__a__b__send_message", `{}`, []string{policies.ActionMessage}},
		{"mcp__gh__update_issue", `{}`, nil},
		{"mcp__linear__update_issue", `{}`, []string{policies.ActionRecord}},
		{"mcp__nodelimiter", `{}`, nil},
		{"Bash", `{}`, nil},
	}
	for _, tc := range tests {
		var got []string
		for _, a := range MCPActions(tc.name, json.RawMessage(tc.input)) {
			got = append(got, a.Kind)
		}
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s %s: %v, want %v", tc.name, tc.input, got, want)
		}
	}
}

// A user's tools.yaml may name only the known action kinds.
func TestRuleActionValidated(t *testing.T) {
	src := func(action string) policies.Source {
		return policies.Source{Name: policies.ToolsFile, Data: []byte("schema: docket.tools.v1\nrules:\n  - {id: r, effect: escalate, action: " + action + ", reason: x}\n")}
	}
	if _, err := policies.ParseTools(src("message")); err != nil {
		t.Errorf("action message: %v", err)
	}
	if _, err := policies.ParseTools(src("messages")); err == nil || !strings.Contains(err.Error(), "action") {
		t.Errorf("unknown action accepted: %v", err)
	}
}
