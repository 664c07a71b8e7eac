package server

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestOpenAPIMatchesRoutes fails when a route and the OpenAPI document
// disagree: a route the document lacks, a documented operation no route
// serves, or a different role.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("openapi %q, want 3.1.x", doc.OpenAPI)
	}
	documented := map[string]string{} // "GET /path" -> role
	for path, ops := range doc.Paths {
		for method, op := range ops {
			documented[strings.ToUpper(method)+" "+path] = gjson.GetBytes(op, "x-docket-role").Str
			if sec := gjson.GetBytes(op, "security"); !sec.Exists() {
				t.Errorf("%s %s: no security requirement", method, path)
			}
		}
	}
	served := map[string]string{}
	for _, rt := range routes {
		served[rt.method+" "+rt.path] = string(rt.role)
	}
	var missing, extra, roles []string
	for k, role := range served {
		d, ok := documented[k]
		if !ok {
			missing = append(missing, k)
		} else if d != role {
			roles = append(roles, k+": route "+role+", document "+d)
		}
	}
	for k := range documented {
		if _, ok := served[k]; !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing)+len(extra)+len(roles) > 0 {
		t.Fatalf("routes and openapi.json disagree:\n  undocumented routes: %v\n  documented, not served: %v\n  roles: %v", missing, extra, roles)
	}

	// every documented operation reaches its handler through the mux
	e := newEnv(t)
	for k := range documented {
		method, path, _ := strings.Cut(k, " ")
		path = strings.NewReplacer("{decision_id}", "dec_x", "{memory_id}", "mem_x", "{item_id}", "rev_x", "{approval_id}", "apr_x",
			"{session_id}", "s_x", "{token_id}", "tok_x").Replace(path)
		if path == "/v1/events" {
			continue // a stream; TestEvents covers it
		}
		req, _ := http.NewRequest(method, e.url+path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+e.tokens[RoleAdmin])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 405 || strings.Contains(string(b), "no route") {
			t.Errorf("%s: not served (%d %s)", k, resp.StatusCode, b)
		}
	}
}
