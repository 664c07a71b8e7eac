package firewall

import (
	"os"
	"strings"
	"testing"

	"github.com/docket/docket/store/firewall/gitleaks"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name, text string
		want       string // prefix of the reason; "" = allowed
	}{
		{"lesson", "Deploys to production need a green go test run first.", ""},
		{"plain digits", "Blocked 3 pushes to main in session 42.", ""},
		{"identifier", "Use go_test_pass for claim tests_pass on ./store/...", ""},
		{"github token", "use token ghp_R4nd0mT0k3nV4lu3xYzAbCdEfGh1234567890ab to push", ReasonSecret},
		{"aws key", "creds AKIAZ4Q7MNX2VB3KT5RW for the bucket", ReasonSecret},
		{"slack token", "post with xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", ReasonSecret},
		{"stripe key", "charge with sk_live_4eC39HqLyjWDarjtT1zdp7dc", ReasonSecret},
		{"transcript lines", "User: please deploy\nAssistant: running make deploy\nUser: ok", ReasonTranscript},
		{"transcript json", `[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]`, ReasonTranscript},
		{"thinking", "<thinking>the user wants X so I will</thinking> blocked", ReasonTrace},
		{"thought line", "Thought: I should push\nAction: git push", ReasonTrace},
		{"dump", strings.Repeat("log line\n", 50), ReasonDump},
		{"too long", strings.Repeat("word ", 1000), ReasonTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(tt.text)
			if tt.want == "" && got != "" || tt.want != "" && !strings.HasPrefix(got, tt.want) {
				t.Errorf("Check(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestSecretNeverInReason(t *testing.T) {
	secret := "ghp_R4nd0mT0k3nV4lu3xYzAbCdEfGh1234567890ab"
	if r := Check("token " + secret); strings.Contains(r, secret) || r == "" {
		t.Fatalf("reason %q: want a rule id and no secret", r)
	}
}

func TestTokenShaped(t *testing.T) {
	for text, want := range map[string]bool{
		"go test ./... passed":   false,
		"AKIAZ4Q7MNX2VB3KT5RW":   true,
		"-----BEGIN PRIVATE KEY": true,
		"internationalization":   false,
		"aBcDeFgHiJkLmNoPqRsT":   true,
	} {
		if got := tokenShaped(text); got != want {
			t.Errorf("tokenShaped(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestMain(m *testing.M) {
	UseDetector(gitleaks.Detect)
	os.Exit(m.Run())
}

// Without a detector, anything that could be a secret is refused.
func TestNoDetectorFailsClosed(t *testing.T) {
	UseDetector(nil)
	defer UseDetector(gitleaks.Detect)
	if got := Check("run go_test_pass on ./..."); got == "" {
		t.Fatal("token-shaped text passed with no secret detector installed")
	}
	if got := Check("push the feature branch"); got != "" {
		t.Fatalf("plain text refused: %q", got)
	}
}
