package outbound

import (
	"slices"
	"testing"
)

// Credentials in URLs: what urlCredentials reports, by the matched text.
func TestURLCredentials(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"AWS key pair under short names", "https://c.acme-corp.io/c?k=AKIAIOSFODNN7EXAMPLE&s=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
			[]string{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}},
		{"AWS key pair percent-encoded", "see https://c.acme-corp.io/?a=AKIAIOSFODNN7EXAMPLE&b=wJalrXUtnFEMI%2FK7MDENG%2FbPxRfiCYEXAMPLEKEY now",
			[]string{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI%2FK7MDENG%2FbPxRfiCYEXAMPLEKEY"}},
		{"credential-named parameter", "https://c.acme-corp.io/x?user=me&api_key=Zq8xP2vL9mN4rT7wK1yB", []string{"Zq8xP2vL9mN4rT7wK1yB"}},
		{"parameter name spelled differently", "https://c.acme-corp.io/x?Access-Token=Zq8xP2vL9mN4rT7wK1yB;x=1", []string{"Zq8xP2vL9mN4rT7wK1yB"}},
		{"in the fragment", "https://c.acme-corp.io/cb#id_token=Zq8xP2vL9mN4rT7wK1yB", []string{"Zq8xP2vL9mN4rT7wK1yB"}},
		{"a token shape under any name", "https://c.acme-corp.io/x?q=ghp_R4nd0mT0k3nV4lu3xYzAbCdEfGh1234567890ab", []string{"ghp_R4nd0mT0k3nV4lu3xYzAbCdEfGh1234567890ab"}},
		{"userinfo password", "git clone https://deploy:Zq8xP2vL9mN4@git.acme-corp.io/r.git", []string{"deploy:Zq8xP2vL9mN4"}},
		{"the same parameter twice", "https://c.acme-corp.io/x?token=Zq8xP2vL9mN4rT7wK1yB&token=Zq8xP2vL9mN4rT7wK1yB", []string{"Zq8xP2vL9mN4rT7wK1yB", "Zq8xP2vL9mN4rT7wK1yB"}},
		// near misses
		{"paging token", "https://api.acme-corp.io/items?page_token=Zq8xP2vL9mN4rT7wK1yB&pageToken=Zq8xP2vL9mN4", nil},
		{"placeholder", "https://docs.acme-corp.io/api?token=YOUR_TOKEN&key=$API_KEY&password=changeme", nil},
		{"documented key id alone", "https://docs.acme-corp.io/iam?id=AKIAIOSFODNN7EXAMPLE", nil},
		{"key id without a secret", "https://docs.acme-corp.io/iam?id=AKIAIOSFODNN7EXAMPLE&region=us-east-1", nil},
		{"no query", "https://docs.acme-corp.io/token/secret/key", nil},
		{"a word, not a credential", "https://c.acme-corp.io/x?token=language", nil},
		{"a document key", "https://docs.acme-corp.io/spreadsheets?key=1aB2cD3eF4gH5iJ6", nil},
		{"userinfo without a password", "https://git@github.com/o/r.git", nil},
	}
	for _, tc := range tests {
		var got []string
		for _, f := range urlCredentials(tc.text) {
			if f.Kind != Secret {
				t.Errorf("%s: kind %s", tc.name, f.Kind)
			}
			got = append(got, tc.text[f.Start:f.End])
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
